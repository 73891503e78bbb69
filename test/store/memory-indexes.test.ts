/**
 * The memory driver keeps sessions, actions and tasks by user and memory items by namespace. This drives the
 * memory store and a SQLite store (a real file) through the same random calls, batches that fail after
 * writing and sweeps included, and checks that every user's lists give the same answer on both.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.js';
import type { JsonValue } from '../../src/core/json.js';
import { OPEN_TASK_STATES } from '../../src/core/model.js';
import { createMemoryStore } from '../../src/store/memory/index.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import type { Scope, StateStore } from '../../src/store/types.js';

const dir = mkdtempSync(join(tmpdir(), 'agentstate-memory-indexes-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A seeded generator (mulberry32): the same calls on every run. */
function seeded(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const SCOPES: Scope[] = [
  { tenant_id: 't1', user_id: 'u1' },
  { tenant_id: 't1', user_id: 'u2' },
  { tenant_id: 't2', user_id: 'u1' },
];
const NAMESPACES = ['prefs', 'notes'];
const KEYS = ['a', 'ab', 'abc', 'b', 'ba'];
const BASE32 = 'abcdefghijklmnopqrstuvwxyz234567';

/** What a call returned or threw, comparable across stores (ids of actions and tasks left out). */
async function outcome(call: () => Promise<unknown>): Promise<string> {
  try {
    await call();
    return 'ok';
  } catch (error) {
    return `error ${(error as { code?: string }).code ?? String(error)}`;
  }
}

/** Every page of a list, through its cursors, with a page size that makes several pages. */
async function all<T>(page: (cursor: string | null) => Promise<{ items: T[]; next_cursor: string | null }>) {
  const items: T[] = [];
  let cursor: string | null = null;
  do {
    const got = await page(cursor);
    items.push(...got.items);
    cursor = got.next_cursor;
  } while (cursor !== null);
  return items;
}

/** Every user's lists, in a form both stores give alike. */
async function lists(store: StateStore) {
  const out: JsonValue[] = [];
  for (const scope of SCOPES) {
    const sessions = await all((cursor) => store.listSessions(scope, { limit: 3, cursor }));
    const ended = await all((cursor) => store.listSessions(scope, { limit: 2, cursor, status: 'ended' }));
    const actions = await all((cursor) => store.listActions(scope, { limit: 3, cursor }));
    const tasks = await all((cursor) => store.listTasks(scope, { limit: 3, cursor }));
    const open = await all((cursor) => store.listTasks(scope, { limit: 2, cursor, state: OPEN_TASK_STATES }));
    const memory: JsonValue[] = [];
    for (const ns of NAMESPACES) {
      for (const prefix of ['', 'a', 'ab', 'b']) {
        const items = await all((cursor) => store.listMemory(scope, ns, { limit: 2, cursor, prefix }));
        memory.push(items.map((item) => [item.namespace, item.key, item.value, item.expires_at]));
      }
    }
    out.push({
      sessions: sessions.map((s) => [s.id, s.version, s.status, s.expires_at]),
      ended: ended.map((s) => s.id),
      actions: actions.map((a) => [a.idempotency_key, a.status, a.attempts]),
      tasks: tasks.map((t) => [t.type, t.state, t.version]),
      events: await Promise.all(
        tasks.map(async (t) =>
          (await store.listTaskEvents(scope, t.id)).map((e) => [e.from_state, e.to_state, e.task_version]),
        ),
      ),
      open: open.map((t) => [t.type, t.state, t.version]),
      memory,
    });
  }
  const tenantWide = await all((cursor) => store.listSessions({ tenant_id: 't1' }, { limit: 4, cursor }));
  out.push(tenantWide.map((s) => s.id));
  return out;
}

describe('the memory driver against SQLite, through random calls', () => {
  it('lists the same sessions, actions, tasks and memory items after every step', async () => {
    const clockA = new ManualClock('2026-05-01T00:00:00.000Z');
    const clockB = new ManualClock('2026-05-01T00:00:00.000Z');
    const memory = createMemoryStore({ clock: clockA });
    const sqlite = await openSqliteStore(join(dir, 'db.sqlite'), { clock: clockB });
    const stores = [memory, sqlite];
    const random = seeded(31);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
    const sessions: { id: string; owner: Scope }[] = [];
    const tasks = new Map<Scope, string[][]>(SCOPES.map((scope) => [scope, []]));
    let rolledBack = 0;
    let swept = 0;
    try {
      for (let step = 0; step < 300; step++) {
        const scope = pick(SCOPES);
        const roll = random();
        const session = sessions.length === 0 ? null : pick(sessions);
        const results: string[] = [];
        if (roll < 0.15 || session === null) {
          const id = `sess_${[...step.toString(32)]
            .map((c) => BASE32[parseInt(c, 32)])
            .join('')
            .padStart(26, 'a')}`;
          const ttl = 30 + Math.floor(random() * 300);
          for (const store of stores)
            results.push(await outcome(() => store.createSession(scope, { id, ttl_seconds: ttl })));
          sessions.push({ id, owner: scope });
        } else if (roll < 0.22) {
          // Sometimes another user's session: refused alike.
          for (const store of stores)
            results.push(await outcome(() => store.deleteSession(scope, session.id)));
        } else if (roll < 0.3) {
          for (const store of stores) results.push(await outcome(() => store.endSession(scope, session.id)));
        } else if (roll < 0.5) {
          const item = {
            namespace: pick(NAMESPACES),
            key: pick(KEYS),
            value: { step },
            ...(random() < 0.3 ? { ttl_seconds: 20 + Math.floor(random() * 200) } : {}),
          };
          for (const store of stores) results.push(await outcome(() => store.putMemory(scope, item)));
        } else if (roll < 0.58) {
          const [ns, k] = [pick(NAMESPACES), pick(KEYS)];
          for (const store of stores) results.push(await outcome(() => store.deleteMemory(scope, ns, k)));
        } else if (roll < 0.75) {
          const key = `k${Math.floor(random() * 6)}`;
          const created: string[] = [];
          for (const store of stores) {
            results.push(
              await outcome(async () => {
                const task = await store.createTask(scope, { type: 'book' });
                created.push(task.id);
                await store.beginAction(scope, {
                  task_id: task.id,
                  type: 'call',
                  params: {},
                  idempotency_key: key,
                });
              }),
            );
          }
          tasks.get(scope)?.push(created);
        } else if (roll < 0.9) {
          // A batch that writes a session, memory items and an action, then fails: nothing of it stays.
          const owned = sessions.filter((s) => s.owner === scope);
          const target = owned.length === 0 ? null : pick(owned);
          const ids = tasks.get(scope) ?? [];
          const task = ids.length === 0 ? null : pick(ids);
          const fail = random() < 0.6;
          const namespace = pick(NAMESPACES);
          const cancel = random() < 0.5;
          const version = target === null ? null : (await memory.getSession(scope, target.id))?.version;
          results.push('', '');
          for (const [i, store] of stores.entries()) {
            const taskVersion =
              task === null ? null : (await store.getTask(scope, task[i] as string))?.version;
            results[i] = await outcome(() =>
              store.commitTurn(scope, {
                ...(target === null
                  ? {}
                  : {
                      session: {
                        id: target.id,
                        expected_version: version ?? 1,
                        patch: { context: { step } },
                      },
                    }),
                ...(task === null
                  ? {}
                  : {
                      begin_actions: [
                        { task_id: task[i] as string, type: 'call', params: {}, idempotency_key: `b${step}` },
                      ],
                      // Out of the open tasks, unless the batch fails.
                      ...(cancel
                        ? {
                            update_tasks: [
                              {
                                id: task[i] as string,
                                expected_version: taskVersion ?? 1,
                                patch: { state: 'CANCELLED' },
                              },
                            ],
                          }
                        : {}),
                    }),
                put_memory: [{ namespace, key: `a${step % 3}`, value: step }],
                ...(fail && target !== null
                  ? {
                      events: {
                        session_id: target.id,
                        run_id: `run${step}`,
                        final: () => {
                          throw new Error('refused after the writes');
                        },
                      },
                    }
                  : {}),
              }),
            );
          }
          if (results[0] !== 'ok') rolledBack++;
        } else {
          clockA.advance(40_000);
          clockB.advance(40_000);
          for (const store of stores) results.push(String(await store.sweepExpired(1_000)));
          swept += Number(results[0]);
        }
        expect(results[1], `step ${step}`).toBe(results[0]);
        expect(await lists(memory), `step ${step}`).toEqual(await lists(sqlite));
      }
      // The run went where the indexes can go wrong.
      expect(rolledBack).toBeGreaterThan(5);
      expect(swept).toBeGreaterThan(5);
    } finally {
      await memory.close();
      await sqlite.close();
    }
  }, 120_000);
});
