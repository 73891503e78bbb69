/**
 * The built-in assistant on a model that calls tools (the openai model against a local Chat Completions
 * server): its turns are a tool loop whose calls are recorded actions with idempotency keys, on the demo
 * airline and the deploy tools; a crash at any commit of the loop resumes with the booking made once.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AirlineService } from '../../src/demo/index.js';
import { createDemoTools, startAirlineService, tallyEffectLog } from '../../src/demo/index.js';
import { createOpenAIModel } from '../../src/models/openai/index.js';
import { createRulesModel } from '../../src/models/rules/index.js';
import { createModelRegistry } from '../../src/models/types.js';
import { type RuntimeOptions, resumeRun, runTurn } from '../../src/runtime/turn.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import type { StateStore } from '../../src/store/types.js';
import { type ChatCompletionsServer, startChatCompletionsServer } from '../http/chat-completions-server.js';
import { crashingStore, SimulatedCrash } from './faults.js';
import { freshScope, runtimeOptions, tempDir } from './setup.js';

const temp = tempDir();
let model: ChatCompletionsServer;
let airline: AirlineService;
let store: StateStore;

const BOOK = 'Book me BJS to SHA on 2027-01-15, economy, for Ada Lovelace';
const BOOKING = {
  origin: 'BJS',
  destination: 'SHA',
  date: '2027-01-15',
  cabin_class: 'economy',
  passenger_name: 'Ada Lovelace',
};

beforeAll(async () => {
  model = await startChatCompletionsServer();
  airline = await startAirlineService({ dataDir: join(temp.dir, 'airline') });
  store = await openSqliteStore(join(temp.dir, 'tools.db'));
  model.toolPlans.set(BOOK, [{ name: 'airline_book', arguments: BOOKING }]);
});

afterAll(async () => {
  await store.close();
  await airline.close();
  await model.stop();
  temp.cleanup();
});

function options(sessionId: string, scope: ReturnType<typeof freshScope>, over: StateStore = store) {
  const tools = createDemoTools({ workspaceDir: join(temp.dir, 'ws'), airlineUrl: airline.url });
  const openai = createOpenAIModel({ baseURL: model.baseURL, model: 'fake-tools', maxRetries: 0 });
  return {
    ...runtimeOptions(over, scope, sessionId, tools),
    models: createModelRegistry([createRulesModel(), openai]),
    model: 'openai',
  } satisfies RuntimeOptions;
}

/** Bookings the airline made for a passenger (its effect log counts every one, duplicates included). */
function bookingsFor(passenger: string): number {
  const tally = tallyEffectLog(airline.effectsPath);
  return Object.entries(tally.steps)
    .filter(([step]) => step.includes(passenger))
    .reduce((sum, [, step]) => sum + step.effects, 0);
}

describe('the assistant on a model that calls tools', { timeout: 60_000 }, () => {
  it('books through airline.book as a recorded action with an idempotency key', async () => {
    const scope = freshScope();
    const session = await store.createSession(scope, { agent: 'assistant' });
    const before = model.seen.length;
    const answer = await runTurn({ ...options(session.id, scope), input: BOOK });

    expect(answer.reply).toMatch(/^«fake-tools» done: \{"booking_id":"\S+"/);
    expect(answer.actions).toHaveLength(1);
    expect(answer.actions[0]).toMatchObject({
      tool: 'airline.book',
      status: 'SUCCESS',
      params: BOOKING,
      type: 'durable_action',
    });
    expect(answer.actions[0]?.idempotency_key).toMatch(/^task_/);
    expect(answer.tasks[0]).toMatchObject({
      type: 'tool_loop',
      state: 'DONE',
      status_line: 'done: airline_book',
    });
    expect(bookingsFor('Ada Lovelace')).toBe(1);

    // The model was offered the assistant's tools under names Chat Completions accepts.
    const asked = model.seen.slice(before);
    expect(asked).toHaveLength(2);
    const messages = await store.listMessages(scope, session.id);
    expect(messages.map((m) => `${m.role}: ${m.content}`)).toEqual([
      `user: ${BOOK}`,
      `assistant: ${answer.reply}`,
    ]);

    // The run's events: the action as it went, and the final event carrying the turn's answer.
    const events = await store.listRunEvents(scope, session.id, answer.run_id);
    const types = events.map((event) => event.type);
    expect(types[0]).toBe('run.started');
    expect(types.filter((type) => type === 'action.updated')).toHaveLength(2);
    expect(types.at(-1)).toBe('run.completed');
    expect(events.at(-1)?.data).toEqual(JSON.parse(JSON.stringify(answer)));
  });

  it('chains the deploy tools, each fed the result before, and answers a turn that needs no tool', async () => {
    const scope = freshScope();
    const session = await store.createSession(scope, { agent: 'assistant' });
    const target = { service: 'checkout-api', environment: 'staging', version: '2.0.1' };
    const ask = 'deploy checkout-api 2.0.1 to staging';
    model.toolPlans.set(ask, [
      { name: 'deploy_plan', arguments: target },
      { name: 'deploy_write_files', arguments: (results: unknown[]) => ({ ...target, plan: results[0] }) },
    ]);
    const deployed = await runTurn({ ...options(session.id, scope), input: ask });
    expect(deployed.actions.map((a) => [a.tool, a.status])).toEqual([
      ['deploy.plan', 'SUCCESS'],
      ['deploy.write_files', 'SUCCESS'],
    ]);
    expect(deployed.actions[1]?.params).toMatchObject({ plan: deployed.actions[0]?.result });

    const chat = await runTurn({ ...options(session.id, scope), input: 'thanks!' });
    expect(chat.reply).toBe('«fake-tools» no tool needed');
    expect(chat.actions).toEqual([]);
    // No tool called, no task written: the turn's messages are all it wrote.
    expect(chat.tasks.filter((task) => task.type === 'tool_loop' && task.state !== 'DONE')).toEqual([]);
    const tasks = await store.listTasks(scope, { session_id: session.id });
    expect(tasks.items).toHaveLength(1);
  });

  it('tells the model what was wrong with arguments its tool refuses, without calling the tool', async () => {
    const scope = freshScope();
    const session = await store.createSession(scope, { agent: 'assistant' });
    const ask = 'book me something on a bad date';
    model.toolPlans.set(ask, [{ name: 'airline_book', arguments: { ...BOOKING, date: 'soon' } }]);
    const answer = await runTurn({ ...options(session.id, scope), input: ask });
    expect(answer.actions).toEqual([]);
    expect(answer.reply).toBe(
      '«fake-tools» done: {"error":"invalid arguments: date: must be a date as YYYY-MM-DD"}',
    );
  });

  it('a crash at any commit of the loop resumes to the same answer, the booking made once', async () => {
    let crashed = 0;
    for (let at = 1; ; at++) {
      for (const when of ['before', 'after'] as const) {
        const scope = freshScope();
        const passenger = `Grace Hopper ${at}${when}`;
        const ask = `Book BJS to SHA on 2027-01-15 for ${passenger}`;
        model.toolPlans.set(ask, [
          { name: 'airline_book', arguments: { ...BOOKING, passenger_name: passenger } },
        ]);
        const session = await store.createSession(scope, { agent: 'assistant' });
        let answer: Awaited<ReturnType<typeof runTurn>> | null = null;
        try {
          answer = await runTurn({
            ...options(session.id, scope, crashingStore(store, at, when)),
            input: ask,
          });
        } catch (error) {
          expect(error).toBeInstanceOf(SimulatedCrash);
          crashed++;
          answer = await resumeRun(options(session.id, scope));
        }
        expect(bookingsFor(passenger)).toBe(1);
        expect(answer?.reply).toMatch(/^«fake-tools» done: \{"booking_id":"\S+"/);
        expect(answer?.actions.map((a) => a.status)).toEqual(['SUCCESS']);
        const messages = await store.listMessages(scope, session.id);
        expect(messages).toHaveLength(2);
        if (answer !== null && !answer.resumed && at > 1) {
          // The run got through without reaching commit `at`: every commit has been crashed at.
          expect(crashed).toBeGreaterThanOrEqual(5);
          return;
        }
      }
    }
  });

  it('a failing model fails the turn with upstream_unavailable and writes nothing; it runs once back', async () => {
    const scope = freshScope();
    const session = await store.createSession(scope, { agent: 'assistant' });
    const ask = 'Book BJS to SHA on 2027-01-15 for Alan Kay';
    model.toolPlans.set(ask, [
      { name: 'airline_book', arguments: { ...BOOKING, passenger_name: 'Alan Kay' } },
    ]);
    model.failing = true;
    try {
      await expect(runTurn({ ...options(session.id, scope), input: ask })).rejects.toMatchObject({
        code: 'upstream_unavailable',
      });
    } finally {
      model.failing = false;
    }
    expect(await store.listMessages(scope, session.id)).toEqual([]);
    expect((await store.listTasks(scope, { session_id: session.id })).items).toEqual([]);
    // Back: the interrupted turn is finished first (its input, once), then the new one runs.
    const next = await runTurn({ ...options(session.id, scope), input: 'thanks!' });
    expect(next.reply).toBe('«fake-tools» no tool needed');
    const messages = await store.listMessages(scope, session.id);
    expect(bookingsFor('Alan Kay')).toBe(1);
    expect(messages.map((m) => m.content)).toEqual([
      ask,
      expect.stringMatching(/^«fake-tools» done: \{"booking_id"/),
      'thanks!',
      '«fake-tools» no tool needed',
    ]);
  });

  it('keeps the slot-filling assistant on the rules model', async () => {
    const scope = freshScope();
    const session = await store.createSession(scope, { agent: 'assistant' });
    const answer = await runTurn({
      ...options(session.id, scope),
      model: 'rules',
      input: 'I need a flight to Shenzhen',
    });
    expect(answer.reply).toBe('Where are you flying from?');
    expect(answer.tasks[0]?.type).toBe('flight_booking');
  });
});
