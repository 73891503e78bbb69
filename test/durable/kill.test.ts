/**
 * Durable runs in real child processes killed with SIGKILL, on a SQLite file and on PostgreSQL: a run
 * killed at a step boundary, after a store write or inside an action (before or after its effect) is
 * continued by a new process and finishes with the values the killed one had recorded; the effect log the
 * tools append to holds each effect exactly once, under the key the store recorded. A run that waits for
 * input is continued by another process with the input; input its schema refuses is `invalid_request`.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { JsonValue } from '../../src/core/json.js';
import type { Scope, StateStore } from '../../src/store/types.js';
import { type ChildRun, jsonLines, resultOf, runChild as spawnChild } from './children.js';
import { freshScope, postgresStore, sqliteStore, type TestStore, tempDir } from './stores.js';

// Each test runs two to four child processes through tsx, one after another: a loaded machine's pace.
vi.setConfig({ testTimeout: 60_000 });

const temp = tempDir();
const stores: TestStore[] = [sqliteStore(temp.dir, 'kill.db'), postgresStore()];
afterAll(async () => {
  for (const s of stores) await s.cleanup();
  temp.cleanup();
});
const script = join(import.meta.dirname, 'child.ts');

function effectsIn(log: string): { step: string; key: string; result: string }[] {
  return jsonLines(log);
}

function callsIn(log: string): string[] {
  const file = `${log}.calls`;
  return existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
}

function runChild(args: string[], env: Record<string, string> = {}): Promise<ChildRun> {
  return spawnChild(script, args, env);
}

/** Kill points of the booking run: step boundaries, every store write, inside both actions. */
const KILLS = [
  'write:1',
  'write:2',
  'after-quote',
  'write:3',
  'charge:before_effect',
  'charge:after_effect',
  'write:4',
  'after-charge',
  'ship:before_effect',
  'ship:after_effect',
  'write:6',
  'write:7',
];

describe.each(stores)('durable runs killed with SIGKILL on $name', (testStore) => {
  let store: StateStore;
  beforeAll(async () => {
    store = await testStore.open();
  });
  afterAll(async () => {
    await store.close();
  });

  async function scenario(): Promise<{ scope: Scope; sessionId: string; log: string; args: string[] }> {
    const scope = freshScope();
    const { id } = await store.createSession(scope, { agent: null });
    const log = join(temp.dir, `effects-${id}.jsonl`);
    return {
      scope,
      sessionId: id,
      log,
      args: [testStore.url ?? '', scope.tenant_id, scope.user_id, id, log],
    };
  }

  async function actionsOf(scope: Scope, sessionId: string) {
    const tasks = await store.listTasks(scope, { session_id: sessionId });
    const all = [];
    for (const task of tasks.items) all.push(...(await store.listActions(scope, { task_id: task.id })).items);
    return all;
  }

  it.each(KILLS)(
    'killed at %s, the run is continued by another process: recorded values replayed, each effect once',
    async (killAt) => {
      const { scope, sessionId, log, args } = await scenario();
      const owner = `owner-${sessionId}`;
      const killed = await runChild([...args, 'booking'], { DURABLE_KILL_AT: killAt, DURABLE_OWNER: owner });
      expect(killed.signal, killed.stderr).toBe('SIGKILL');
      expect(killed.events.at(-1)).toEqual({ event: 'point', point: killAt });
      const resumed = await runChild([...args, 'booking'], { DURABLE_OWNER: owner });
      const result = resultOf(resumed);
      expect(result).toMatchObject({ status: 'done', resumed: killAt !== 'write:7' });
      // The values the killed process saw, when its quote step was stored before the kill, come back.
      const seen = killed.events.find((e) => e.event === 'quote');
      const value = (result as { value: { at: number; quote: JsonValue } }).value;
      if (seen !== undefined) expect({ at: value.at, quote: value.quote }).toEqual(seen.value);
      expect(callsIn(log)).toEqual(['quote']);
      // Each effect exactly once, under the key the store recorded for its action, which is SUCCESS.
      const effects = effectsIn(log);
      expect(effects.map((e) => e.step).sort()).toEqual(['charge', 'ship']);
      const actions = await actionsOf(scope, sessionId);
      expect(actions.map((a) => [a.tool, a.status]).sort()).toEqual([
        ['charge', 'SUCCESS'],
        ['ship', 'SUCCESS'],
      ]);
      for (const effect of effects) {
        const action = actions.find((a) => a.tool === effect.step);
        expect(action?.idempotency_key).toBe(effect.key);
        expect(action?.result).toBe(effect.result);
      }
      expect(value).toMatchObject({ charge: effects[0]?.result, ticket: effects[1]?.result });
    },
    60_000,
  );

  it('two processes resuming the same killed run at once: one goes on, the effect still happens once', async () => {
    const { scope, sessionId, log, args } = await scenario();
    // A lease renewed every second lasts 3: a loaded machine's gap between two commits does not lose it.
    const lease = { DURABLE_LEASE_TTL_MS: '3000', DURABLE_LEASE_WAIT_MS: '20000' };
    const killed = await runChild([...args, 'booking'], {
      ...lease,
      DURABLE_OWNER: 'first',
      DURABLE_KILL_AT: 'charge:after_effect',
    });
    expect(killed.signal).toBe('SIGKILL');
    // Two new owners wait for the dead one's lease to run out; the one that gets it finishes the run, the
    // other gets the lease after it and answers the finished run (same key).
    const [a, b] = await Promise.all([
      runChild([...args, 'booking'], { ...lease, DURABLE_OWNER: 'second' }),
      runChild([...args, 'booking'], { ...lease, DURABLE_OWNER: 'third' }),
    ]);
    const results = [resultOf(a), resultOf(b)] as { status: string; resumed: boolean; value: unknown }[];
    expect(results.map((r) => r.status)).toEqual(['done', 'done']);
    expect(results.map((r) => r.resumed).sort()).toEqual([false, true]);
    expect(results[0]?.value).toEqual(results[1]?.value);
    expect(effectsIn(log).map((e) => e.step)).toEqual(['charge', 'ship']);
    expect((await actionsOf(scope, sessionId)).map((action) => action.status)).toEqual([
      'SUCCESS',
      'SUCCESS',
    ]);
  });

  it('an action killed after its effect, whose lookup cannot tell, waits for a person and then goes on', async () => {
    const { scope, sessionId, log, args } = await scenario();
    const env = { DURABLE_OWNER: `owner-${sessionId}`, DURABLE_LOOKUP: 'ambiguous' };
    const killed = await runChild([...args, 'booking'], { ...env, DURABLE_KILL_AT: 'ship:after_effect' });
    expect(killed.signal).toBe('SIGKILL');
    const blocked = resultOf(await runChild([...args, 'booking'], env));
    expect(blocked).toMatchObject({ status: 'blocked', note: expect.stringContaining('ambiguous') });
    const actionId = (blocked as { action_id: string }).action_id;
    expect(await store.getAction(scope, actionId)).toMatchObject({ tool: 'ship', status: 'UNKNOWN' });
    const [, ship] = effectsIn(log);
    await store.resolveAction(scope, actionId, {
      status: 'SUCCESS',
      result: ship?.result ?? null,
      note: 'seen',
    });
    const done = resultOf(await runChild([...args, 'booking'], env));
    expect(done).toMatchObject({ status: 'done', value: { ticket: ship?.result } });
    expect(effectsIn(log).map((e) => e.step)).toEqual(['charge', 'ship']);
    expect((await actionsOf(scope, sessionId)).map((a) => a.status)).toEqual(['SUCCESS', 'SUCCESS']);
  });

  it('a run killed while it sleeps wakes at the deadline the killed process stored', async () => {
    const { sessionId, args } = await scenario();
    const env = { DURABLE_OWNER: `owner-${sessionId}` };
    // Writes: the run's start, then the sleep's deadline; the kill comes during the hour's wait.
    const killed = await runChild([...args, 'sleeper'], { ...env, DURABLE_KILL_AT: 'write:2' });
    expect(killed.signal).toBe('SIGKILL');
    // A process whose clock is past the stored deadline goes on at once (one that took a new deadline
    // would wait an hour, and this test would time out).
    const later = String(3_600_000 + 60_000);
    const resumed = resultOf(
      await runChild([...args, 'sleeper'], { ...env, DURABLE_CLOCK_OFFSET_MS: later }),
    );
    expect(resumed).toMatchObject({ status: 'done', resumed: true });
    const { before, after } = (resumed as { value: { before: number; after: number } }).value;
    expect(after - before).toBeGreaterThanOrEqual(3_600_000);
  });

  it('a run waiting for input is continued by another process; refused input changes nothing', async () => {
    const { scope, sessionId, log, args } = await scenario();
    const first = await runChild([...args, 'confirm']);
    expect(first.code).toBe(0);
    expect(resultOf(first)).toMatchObject({ status: 'waiting', prompt: 'Book seat 12A?' });
    const offer = first.events.find((e) => e.event === 'offer')?.value;

    const refused = await runChild([...args, 'confirm', JSON.stringify({ confirm: 'yes please' })]);
    expect(refused.code).toBe(2);
    expect(refused.events.at(-1)).toMatchObject({
      event: 'error',
      code: 'invalid_request',
      message: expect.stringMatching(/^input: confirm: /),
    });
    expect(await store.listTasks(scope, { session_id: sessionId })).toMatchObject({
      items: [{ state: 'EXECUTING', data: { waiting: { prompt: 'Book seat 12A?' } } }],
    });

    const answered = await runChild([...args, 'confirm', JSON.stringify({ confirm: true })]);
    const done = resultOf(answered);
    expect(done).toMatchObject({ status: 'done', input_used: true, resumed: true, value: { offer } });
    expect(callsIn(log)).toEqual(['offer']);
    expect(effectsIn(log).map((e) => e.step)).toEqual(['book']);
    expect((await store.getSession(scope, sessionId))?.status).toBe('active');
  });

  it('a run killed right after it took its input keeps waiting for it; the next input is taken once', async () => {
    const { sessionId, log, args } = await scenario();
    const env = { DURABLE_OWNER: `owner-${sessionId}` };
    expect(resultOf(await runChild([...args, 'confirm'], env))).toMatchObject({ status: 'waiting' });
    // The child's writes: the answer is stored by write 1; a kill inside the book action comes after it.
    const killed = await runChild([...args, 'confirm', JSON.stringify({ confirm: true })], {
      ...env,
      DURABLE_KILL_AT: 'book:after_effect',
    });
    expect(killed.signal).toBe('SIGKILL');
    const resumed = resultOf(await runChild([...args, 'confirm'], env));
    expect(resumed).toMatchObject({
      status: 'done',
      input_used: false,
      value: { booked: expect.any(String) },
    });
    expect(effectsIn(log).map((e) => e.step)).toEqual(['book']);
  });
});
