/**
 * Agents modules (agents-modules.ts): the forms their tools may take, and what they refuse. Turn threads
 * (`serve --turn-threads`), started by startTurnThreads as real workers:
 * - a turn over HTTP runs on a thread whose agents and tools come from the agents modules it is given,
 *   with their options: the booking goes through the tool registry those modules build, and nothing else;
 * - a thread that dies holding the SQLite write lock frees it as it exits, so the other threads and the main
 *   thread go on writing (an agents module takes the lock in the thread, holds it long enough to be seen
 *   holding it, and ends the thread before it is ready).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Action, Session } from '../../src/core/model.js';
import { linkAgentsModules, loadAgentsModule } from '../../src/server/agents-modules.js';
import { createRuntimeTurnRunner } from '../../src/server/runtime-runner.js';
import type { TurnResponse, TurnRunner } from '../../src/server/turn-runner.js';
import { startTurnThreads } from '../../src/server/turn-threads/pool.js';
import { openStore } from '../../src/store/open.js';
import { ThreadWriteLock, writeLockBuffer } from '../../src/store/sqlite/thread-write-lock.js';
import { tempDir } from '../cli/run.js';
import { call, startTestServer } from './harness.js';

const tmp = tempDir();
afterAll(() => tmp.cleanup());

/** The main thread's runner: never asked here, since the only thread never becomes ready. */
const neverAsked = (): Promise<never> => Promise.reject(new Error('the main thread runner is not used here'));
const mainRunner: TurnRunner = { runTurn: neverAsked, resume: neverAsked, checkpoints: neverAsked };

const source = (path: string) => JSON.stringify(new URL(`../../src/${path}`, import.meta.url).href);

/**
 * An agents module of the test's own: the built-in flight booking agent, and an `airline.book` that books
 * nothing anywhere but writes a line to the file its options name, with the thread it ran on.
 */
function writeBookingModule(file: string): void {
  writeFileSync(
    file,
    [
      "import { appendFileSync } from 'node:fs';",
      "import { threadId } from 'node:worker_threads';",
      `import { flightBookingAgent } from ${source('agents/flight-booking.ts')};`,
      `import { AirlineBookParams } from ${source('agents/tool-params.ts')};`,
      'export const agents = [flightBookingAgent];',
      'export function tools(options) {',
      '  const book = {',
      "    name: 'airline.book',",
      "    description: 'records the booking in a file',",
      '    params: AirlineBookParams,',
      '    async execute(params, ctx) {',
      '      const line = { key: ctx.idempotencyKey, passenger: params.passenger_name, thread: threadId };',
      "      appendFileSync(options.bookings, JSON.stringify(line) + '\\n');",
      "      return { booking_id: options.prefix + '-' + threadId };",
      '    },',
      '  };',
      '  return [book];',
      '}',
      '',
    ].join('\n'),
  );
}

describe('agents modules', () => {
  it('take tools as an array or a registry, and refuse a module without agents or a tool named twice', async () => {
    const agent = source('agents/flight-booking.ts');
    const write = (name: string, body: string) => {
      const file = join(tmp.dir, name);
      writeFileSync(file, `import { flightBookingAgent } from ${agent};\n${body}\n`);
      return file;
    };
    const tool = "{ name: 'x.do', description: 'does x', params: undefined, execute: async () => null }";
    const array = write(
      'array.mjs',
      `export const agents = [flightBookingAgent];\nexport const tools = [${tool}];`,
    );
    const registry = write(
      'registry.mjs',
      `export const agent = { ...flightBookingAgent, name: 'other' };\nconst t = ${tool};\nexport const tools = { get: (n) => (n === t.name ? t : undefined), names: () => [t.name] };`,
    );
    const linked = await linkAgentsModules([{ module: array }]);
    expect(linked.agentNames).toEqual(['flight_booking']);
    expect(linked.setup.tools.names()).toEqual(['x.do']);
    expect((await loadAgentsModule({ module: registry })).tools.map((t) => t.name)).toEqual(['x.do']);
    await expect(linkAgentsModules([{ module: array }, { module: registry }])).rejects.toThrow(
      /two tools are named "x.do"/,
    );
    const none = write('none.mjs', 'export const tools = [];');
    await expect(loadAgentsModule({ module: none, label: '--agents none.mjs' })).rejects.toThrow(
      '--agents none.mjs exports no agent (export const agents = [...])',
    );
    await expect(loadAgentsModule({ module: join(tmp.dir, 'missing.mjs') })).rejects.toThrow(
      /^cannot load the agents module .*missing\.mjs: /,
    );
  });
});

describe('turn threads and the tool registry', { timeout: 60_000 }, () => {
  it('books through the tools of the agents modules the threads are given, with their options', async () => {
    const url = `sqlite:${join(tmp.dir, 'registry.db')}`;
    const module = join(tmp.dir, 'booking-agents.mjs');
    const bookings = join(tmp.dir, 'bookings.jsonl');
    writeBookingModule(module);
    const modules = [{ module, options: { bookings, prefix: 'REG' } }];
    const store = await openStore(url);
    // As serve does: the main thread links the same modules for its own runner.
    const linked = await linkAgentsModules(modules);
    expect(linked.setup.tools.names()).toEqual(['airline.book']);
    const pool = await startTurnThreads({
      threads: 2,
      storeUrl: url,
      modules,
      local: createRuntimeTurnRunner(store, linked.setup),
    });
    const server = await startTestServer({ store, turns: pool });
    try {
      const made = await call<Session>(server.url, 'POST', '/v1/sessions', {
        token: server.tokens.alice,
        body: { agent: 'flight_booking' },
      });
      expect(made.status).toBe(201);
      const inputs = [
        'I want to book a flight from Beijing to Tokyo',
        'on 2027-03-01',
        'economy class please',
        'my name is Ada Lovelace',
        'yes',
      ];
      let last: TurnResponse | null = null;
      for (const input of inputs) {
        const turn = await call<TurnResponse>(server.url, 'POST', `/v1/sessions/${made.body.id}/turns`, {
          token: server.tokens.alice,
          body: { input },
        });
        expect(turn.status, turn.text).toBe(200);
        last = turn.body;
      }
      const action = last?.actions[0] as Action;
      expect(action).toMatchObject({ tool: 'airline.book', status: 'SUCCESS' });
      // The module's tool ran once, on a turn thread (not the main thread, 0), under the action's key.
      const lines = readFileSync(bookings, 'utf8')
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line));
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatchObject({ key: action.idempotency_key, passenger: 'Ada Lovelace' });
      expect(lines[0].thread).toBeGreaterThan(0);
      expect(last?.reply).toContain(`Booking reference REG-${lines[0].thread}.`);
    } finally {
      await server.close();
      await pool.close();
      await store.close();
    }
  });
});

describe('turn threads and the SQLite write lock', { timeout: 60_000 }, () => {
  it('frees the lock a thread held when it died', async () => {
    const db = join(tmp.dir, 'turns.db');
    // Made before the threads start, so they share it (as serve's main thread does with its store's).
    const word = new Int32Array(writeLockBuffer(db));
    const lockModule = new URL('../../src/store/sqlite/thread-write-lock.ts', import.meta.url).href;
    const agents = join(tmp.dir, 'grab-and-die.mjs');
    writeFileSync(
      agents,
      [
        "import { isMainThread } from 'node:worker_threads';",
        `import { ThreadWriteLock, writeLockBuffer } from ${JSON.stringify(lockModule)};`,
        'if (!isMainThread) {',
        `  await new ThreadWriteLock(writeLockBuffer(${JSON.stringify(db)})).acquire();`,
        '  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 300);',
        '  process.exit(3);',
        '}',
        'export const agents = [];',
        '',
      ].join('\n'),
    );
    const starting = startTurnThreads({
      threads: 1,
      storeUrl: `sqlite:${db}`,
      modules: [{ module: agents }],
      local: mainRunner,
    });
    const refused = expect(starting).rejects.toThrow(/exited with 3 before it was ready/);
    // The thread holds the very lock this thread waits on (the word names its holder)...
    const deadline = Date.now() + 30_000;
    while (Atomics.load(word, 0) === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 2));
    expect(Atomics.load(word, 0)).toBeGreaterThan(1);
    await refused;
    // ...and it is free again once the thread has died.
    const lock = new ThreadWriteLock(writeLockBuffer(db));
    await lock.acquire();
    expect(Atomics.load(word, 0)).toBe(1);
    lock.release();
  });
});
