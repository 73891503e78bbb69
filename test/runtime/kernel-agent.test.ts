/**
 * An agent written as code on the durable kernel (`Agent.run`), served by turns: it takes the first turn's
 * input, asks a question that the next turn answers (the session waits for its user meanwhile), and books
 * through the demo airline as a recorded action. A crash before or after any commit of either turn resumes
 * to the same conversation, the booking made once and no input taken twice.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUILTIN_AGENTS } from '../../src/agents/index.js';
import {
  type AirlineService,
  createDemoTools,
  startAirlineService,
  tallyEffectLog,
} from '../../src/demo/index.js';
import { createAgentRegistry } from '../../src/runtime/agent.js';
import { type RuntimeOptions, resumeRun, runTurn } from '../../src/runtime/turn.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import type { StateStore } from '../../src/store/types.js';
import { dyingStore, SimulatedCrash } from './faults.js';
import { freshScope, runtimeOptions, tempDir } from './setup.js';
import { tripAgent } from './trip-agent.js';

const temp = tempDir();
let airline: AirlineService;
let store: StateStore;

beforeAll(async () => {
  airline = await startAirlineService({ dataDir: join(temp.dir, 'airline') });
  store = await openSqliteStore(join(temp.dir, 'kernel.db'));
});

afterAll(async () => {
  await store.close();
  await airline.close();
  temp.cleanup();
});

function options(
  sessionId: string,
  scope: ReturnType<typeof freshScope>,
  over: StateStore = store,
): RuntimeOptions {
  const tools = createDemoTools({ workspaceDir: join(temp.dir, 'ws'), airlineUrl: airline.url });
  return {
    ...runtimeOptions(over, scope, sessionId, tools),
    agents: createAgentRegistry([...BUILTIN_AGENTS, tripAgent]),
    // One owner for the process that dies and the one that resumes: a restarted instance takes its own
    // lease at once (a dead process cannot free it).
    lease: { owner: `owner-${scope.user_id}` },
  };
}

function bookingsFor(passenger: string): number {
  return Object.entries(tallyEffectLog(airline.effectsPath).steps)
    .filter(([step]) => step.includes(passenger))
    .reduce((sum, [, step]) => sum + step.effects, 0);
}

describe('an agent of code served by turns', { timeout: 60_000 }, () => {
  it('asks, waits for the next turn, and books as a recorded action', async () => {
    const scope = freshScope();
    const session = await store.createSession(scope, { agent: 'trip_code' });
    const first = await runTurn({
      ...options(session.id, scope),
      input: 'Fly me from BJS to SHA on 2027-04-01',
    });
    expect(first.reply).toBe('Who is flying?');
    expect(first.session.status).toBe('waiting_for_user');
    expect(first.tasks[0]).toMatchObject({ type: 'trip_code', state: 'EXECUTING' });
    const asked = await store.listRunEvents(scope, session.id, first.run_id);
    expect(asked.map((event) => event.type)).toContain('run.waiting');

    const second = await runTurn({ ...options(session.id, scope), input: 'Ada Lovelace' });
    expect(second.reply).toMatch(/^Booked BJS to SHA for Ada Lovelace: \S+\.$/);
    expect(second.session.status).toBe('active');
    expect(second.tasks[0]).toMatchObject({ type: 'trip_code', state: 'DONE' });
    expect(second.actions.map((a) => [a.tool, a.status])).toEqual([['airline.book', 'SUCCESS']]);
    expect(bookingsFor('Ada Lovelace')).toBe(1);
    // The code's task and action changes stream in the turn's own run, which ends with the turn's answer.
    const events = await store.listRunEvents(scope, session.id, second.run_id);
    const types = events.map((event) => event.type);
    expect(types[0]).toBe('run.started');
    expect(types.filter((type) => type === 'action.updated')).toHaveLength(2);
    expect(types).toContain('task.updated');
    expect(types.filter((type) => type.startsWith('run.'))).toEqual(['run.started', 'run.completed']);
    expect(events.at(-1)?.data).toEqual(JSON.parse(JSON.stringify(second)));
    const messages = await store.listMessages(scope, session.id);
    expect(messages.map((m) => m.content)).toEqual([
      'Fly me from BJS to SHA on 2027-04-01',
      'Who is flying?',
      'Ada Lovelace',
      second.reply,
    ]);
  });

  it('a crash at any commit of either turn resumes to the same conversation, one booking', async () => {
    let crashed = 0;
    for (const turn of [0, 1]) {
      for (let at = 1; at <= 6; at++) {
        for (const when of ['before', 'after'] as const) {
          const scope = freshScope();
          const passenger = `Grace Hopper ${turn}${at}${when}`;
          const inputs = ['Fly me from BJS to SHA on 2027-04-02', passenger];
          const session = await store.createSession(scope, { agent: 'trip_code' });
          const replies: string[] = [];
          for (const [index, input] of inputs.entries()) {
            const over = index === turn ? dyingStore(store, at, when) : store;
            try {
              replies.push((await runTurn({ ...options(session.id, scope, over), input })).reply);
            } catch (error) {
              expect(error).toBeInstanceOf(SimulatedCrash);
              crashed++;
              const resumed = await resumeRun(options(session.id, scope));
              replies.push(resumed?.reply ?? '(none)');
            }
          }
          expect(replies[0]).toBe('Who is flying?');
          expect(replies[1]).toMatch(new RegExp(`^Booked BJS to SHA for ${passenger}: \\S+\\.$`));
          const messages = await store.listMessages(scope, session.id);
          expect(messages.map((m) => m.content)).toEqual([inputs[0], replies[0], inputs[1], replies[1]]);
          expect(bookingsFor(passenger)).toBe(1);
        }
      }
    }
    expect(crashed).toBeGreaterThanOrEqual(8);
  });
});
