/**
 * Input bounds (src/store/limits.ts) are the same in every adapter: each case runs against memory:, a SQLite
 * file, PostgreSQL (AGENTSTATE_TEST_POSTGRES_URL), Redis (AGENTSTATE_TEST_REDIS_URL) and tiered (both; the
 * README's defaults on 127.0.0.1 when unset), and
 * asserts `invalid_request` naming the field, and that nothing was stored. Every case failed in at least
 * one adapter before the bounds were shared.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isAgentStateError } from '../../src/core/errors.js';
import type { IdKind } from '../../src/core/ids.js';
import { newId } from '../../src/core/ids.js';
import { createMemoryStore } from '../../src/store/memory/index.js';
import { openPostgresStore } from '../../src/store/postgres/index.js';
import { openRedisStore } from '../../src/store/redis/index.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { openTieredStore } from '../../src/store/tiered/index.js';
import type { Scope, StateStore } from '../../src/store/types.js';
import { createDatabase } from './postgres-env.js';
import { REDIS_URL, randomPrefix, removePrefix } from './redis-env.js';
import { type TieredEnv, tieredEnv } from './tiered-env.js';

const MAX_TTL_SECONDS = 315_360_000;
const MAX_LEASE_MS = 86_400_000;
const INT32_OVER = 2 ** 31;

interface Adapter {
  readonly name: string;
  store: StateStore;
}

const adapters: Adapter[] = [];
const cleanups: (() => Promise<void>)[] = [];

beforeAll(async () => {
  adapters.push({ name: 'memory', store: createMemoryStore() });

  const dir = mkdtempSync(join(tmpdir(), 'agentstate-bounds-'));
  cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
  adapters.push({ name: 'sqlite', store: await openSqliteStore(join(dir, 'bounds.db')) });

  const db = await createDatabase();
  cleanups.push(db.drop);
  adapters.push({ name: 'postgres', store: await openPostgresStore({ url: db.url, max: 4 }) });

  const prefix = randomPrefix();
  cleanups.push(() => removePrefix(prefix));
  adapters.push({ name: 'redis', store: await openRedisStore(REDIS_URL, { prefix }) });

  const env: TieredEnv = tieredEnv();
  cleanups.push(() => env.cleanup());
  adapters.push({ name: 'tiered', store: await openTieredStore(env.url) });
}, 60_000);

afterAll(async () => {
  for (const { store } of adapters) await store.close();
  // Stores first, then their data (a database cannot be dropped while a pool holds it).
  for (const cleanup of cleanups.reverse()) await cleanup();
}, 60_000);

function freshScope(): Scope {
  return { tenant_id: `t-${randomUUID()}`, user_id: `u-${randomUUID()}` };
}

/** Runs `body` against every adapter with a fresh scope; a failure names the adapter. */
async function everyAdapter(body: (store: StateStore, scope: Scope) => Promise<void>): Promise<void> {
  expect(adapters.length).toBeGreaterThan(0);
  for (const { name, store } of adapters) {
    try {
      await body(store, freshScope());
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      throw new Error(`[adapter ${name}] ${message}`, { cause: error });
    }
  }
}

/** Awaits `work` and asserts it failed with invalid_request whose message names `field`. */
async function expectInvalid(work: Promise<unknown>, field: string): Promise<void> {
  let caught: unknown = null;
  try {
    await work;
  } catch (error) {
    caught = error;
  }
  if (caught === null) throw new Error(`expected invalid_request naming ${field}, but the call succeeded`);
  if (!isAgentStateError(caught)) {
    throw new Error(`expected invalid_request naming ${field}, got ${String(caught)}`, { cause: caught });
  }
  expect(caught.code, caught.message).toBe('invalid_request');
  expect(caught.message).toContain(field);
}

async function newTask(store: StateStore, scope: Scope) {
  return store.createTask(scope, { type: 'flight', slots: { from: 'ZRH' }, status_line: 'new' });
}

describe('durations are bounded the same in every adapter', () => {
  it('a lease of more than 24 hours is refused, and does not block another owner', async () => {
    await everyAdapter(async (store, scope) => {
      await expectInvalid(store.acquireLease(scope, 'run', 'owner-a', 1e15), 'ttl_ms');
      await expectInvalid(store.acquireLease(scope, 'run', 'owner-a', 1e16), 'ttl_ms');
      await expectInvalid(store.acquireLease(scope, 'run', 'owner-a', MAX_LEASE_MS + 1), 'ttl_ms');
      const lease = await store.acquireLease(scope, 'run', 'owner-b', 1000);
      expect(lease?.owner).toBe('owner-b');
      expect(await store.acquireLease(scope, 'other', 'owner-a', MAX_LEASE_MS)).not.toBeNull();
    });
  });

  it('a memory TTL over 10 years is refused and stores nothing', async () => {
    await everyAdapter(async (store, scope) => {
      for (const ttl_seconds of [1e12, 1e15, MAX_TTL_SECONDS + 1]) {
        await expectInvalid(
          store.putMemory(scope, { namespace: 'prefs', key: 'lang', value: 'en', ttl_seconds }),
          'ttl_seconds',
        );
      }
      expect(await store.getMemory(scope, 'prefs', 'lang')).toBeNull();
      const kept = await store.putMemory(scope, {
        namespace: 'prefs',
        key: 'tz',
        value: 'UTC',
        ttl_seconds: MAX_TTL_SECONDS,
      });
      expect((await store.getMemory(scope, 'prefs', 'tz'))?.value).toEqual(kept.value);
    });
  });

  it('a session TTL over 10 years is refused at create and stores nothing', async () => {
    await everyAdapter(async (store, scope) => {
      for (const ttl_seconds of [1e12, 1e15, INT32_OVER, MAX_TTL_SECONDS + 1]) {
        await expectInvalid(store.createSession(scope, { ttl_seconds }), 'ttl_seconds');
      }
      expect((await store.listSessions(scope)).items).toEqual([]);
      const longest = await store.createSession(scope, { ttl_seconds: MAX_TTL_SECONDS });
      expect((await store.getSession(scope, longest.id))?.id).toBe(longest.id);
    });
  });

  it('a session TTL over 10 years is refused at update and changes nothing', async () => {
    await everyAdapter(async (store, scope) => {
      const session = await store.createSession(scope, { ttl_seconds: 600 });
      for (const ttl_seconds of [1e12, INT32_OVER, MAX_TTL_SECONDS + 1]) {
        await expectInvalid(
          store.updateSession(scope, session.id, session.version, { ttl_seconds }),
          'ttl_seconds',
        );
        await expectInvalid(
          store.commitTurn(scope, {
            session: { id: session.id, expected_version: session.version, patch: { ttl_seconds } },
          }),
          'ttl_seconds',
        );
      }
      const now = await store.getSession(scope, session.id);
      expect(now?.version).toBe(session.version);
      expect(now?.ttl_seconds).toBe(600);
    });
  });

  it('a request key TTL over 10 years is refused and claims nothing', async () => {
    await everyAdapter(async (store, scope) => {
      await expectInvalid(store.claimRequestKey(scope, 'k1', 'h', 1e12), 'ttl_seconds');
      await expectInvalid(store.claimRequestKey(scope, 'k1', 'h', MAX_TTL_SECONDS + 1), 'ttl_seconds');
      await expectInvalid(store.claimRequestKey(scope, 'k1', 'h', 60, 1e12), 'in_progress_ttl_seconds');
      expect(await store.claimRequestKey(scope, 'k1', 'h', 60)).toEqual({ state: 'new' });
    });
  });
});

describe('integers are bounded by PostgreSQL integer in every adapter', () => {
  it('an expected task version of 2^31 or more is invalid_request and changes nothing', async () => {
    await everyAdapter(async (store, scope) => {
      const task = await newTask(store, scope);
      await expectInvalid(
        store.updateTask(scope, task.id, INT32_OVER, { status_line: 'x' }),
        'expected_version',
      );
      await expectInvalid(
        store.commitTurn(scope, {
          update_tasks: [{ id: task.id, expected_version: INT32_OVER, patch: { status_line: 'x' } }],
        }),
        'expected_version',
      );
      const now = await store.getTask(scope, task.id);
      expect(now?.version).toBe(task.version);
      expect(now?.status_line).toBe('new');
    });
  });

  it('an expected session version of 2^31 or more is invalid_request and changes nothing', async () => {
    await everyAdapter(async (store, scope) => {
      const session = await store.createSession(scope, { ttl_seconds: 600 });
      await expectInvalid(
        store.updateSession(scope, session.id, INT32_OVER, { context: { a: 1 } }),
        'expected_version',
      );
      await expectInvalid(
        store.commitTurn(scope, {
          session: { id: session.id, expected_version: INT32_OVER, patch: { context: { a: 1 } } },
          messages: { session_id: session.id, items: [{ role: 'user', content: 'hi' }] },
        }),
        'expected_version',
      );
      const now = await store.getSession(scope, session.id);
      expect(now?.version).toBe(session.version);
      expect(now?.context).toEqual({});
      expect(await store.listMessages(scope, session.id)).toEqual([]);
    });
  });

  it('a checkpoint step of 2^31 or more is refused and stores nothing', async () => {
    await everyAdapter(async (store, scope) => {
      await expectInvalid(
        store.putCheckpoint(scope, { run_id: 'r', step: INT32_OVER, channels: {} }),
        'step',
      );
      await expectInvalid(
        store.commitTurn(scope, { checkpoint: { run_id: 'r', step: 2 ** 40, channels: {} } }),
        'step',
      );
      expect(await store.latestCheckpoint(scope, 'r')).toBeNull();
    });
  });

  it('after_seq and keep of 2^31 or more are refused', async () => {
    await everyAdapter(async (store, scope) => {
      const session = await store.createSession(scope, { ttl_seconds: 600 });
      await expectInvalid(store.listMessages(scope, session.id, { after_seq: INT32_OVER }), 'after_seq');
      await store.putCheckpoint(scope, { run_id: 'r', step: 0, channels: { a: 1 } });
      await expectInvalid(store.pruneCheckpoints(scope, 'r', INT32_OVER), 'keep');
      expect((await store.listCheckpoints(scope, 'r')).items).toHaveLength(1);
    });
  });
});

describe('lengths and counts are the same in every adapter', () => {
  it('message content of 1,000,001 characters is refused and appends nothing', async () => {
    await everyAdapter(async (store, scope) => {
      const session = await store.createSession(scope, { ttl_seconds: 600 });
      await expectInvalid(
        store.appendMessages(scope, session.id, [{ role: 'user', content: 'x'.repeat(1_000_001) }]),
        'content',
      );
      expect(await store.listMessages(scope, session.id)).toEqual([]);
    });
  });

  it('1001 messages in one append are refused and append nothing', async () => {
    await everyAdapter(async (store, scope) => {
      const session = await store.createSession(scope, { ttl_seconds: 600 });
      const items = Array.from({ length: 1001 }, (_, i) => ({ role: 'user' as const, content: `m${i}` }));
      await expectInvalid(store.appendMessages(scope, session.id, items), 'messages');
      await expectInvalid(
        store.commitTurn(scope, { messages: { session_id: session.id, items } }),
        'messages',
      );
      expect(await store.listMessages(scope, session.id)).toEqual([]);
    });
  });

  it('an idempotency_key of 513 characters is refused and begins nothing', async () => {
    await everyAdapter(async (store, scope) => {
      const task = await newTask(store, scope);
      await expectInvalid(
        store.beginAction(scope, {
          task_id: task.id,
          type: 'tool_call',
          params: null,
          idempotency_key: 'k'.repeat(513),
        }),
        'idempotency_key',
      );
      expect((await store.listActions(scope, { task_id: task.id })).items).toEqual([]);
    });
  });

  it('a tenant_id or user_id of 257 characters is refused', async () => {
    await everyAdapter(async (store, scope) => {
      const longTenant = { tenant_id: 't'.repeat(257), user_id: scope.user_id };
      const longUser = { tenant_id: scope.tenant_id, user_id: 'u'.repeat(257) };
      await expectInvalid(store.createSession(longTenant, { ttl_seconds: 600 }), 'tenant_id');
      await expectInvalid(store.createSession(longUser, { ttl_seconds: 600 }), 'user_id');
      await expectInvalid(store.listSessions(longTenant), 'tenant_id');
      expect((await store.listSessions({ tenant_id: scope.tenant_id })).items).toEqual([]);
    });
  });
});

describe('queries are checked the same in every adapter', () => {
  it('limit: null is refused like any other non-number', async () => {
    await everyAdapter(async (store, scope) => {
      const nullLimit = null as unknown as number;
      await expectInvalid(store.listSessions(scope, { limit: nullLimit }), 'limit');
      await expectInvalid(store.listTasks(scope, { limit: nullLimit }), 'limit');
      await expectInvalid(store.listActions(scope, { limit: nullLimit }), 'limit');
      await expectInvalid(store.listCheckpoints(scope, 'r', { limit: nullLimit }), 'limit');
      await expectInvalid(store.listMemory(scope, 'prefs', { limit: nullLimit }), 'limit');
    });
  });

  it('a task_id, session_id or before that is not an id is refused', async () => {
    await everyAdapter(async (store, scope) => {
      await expectInvalid(store.listActions(scope, { task_id: 'garbage' }), 'task_id');
      await expectInvalid(store.listTasks(scope, { session_id: 'garbage' }), 'session_id');
      await expectInvalid(store.listCheckpoints(scope, 'r', { before: 'garbage' }), 'before');
    });
  });
});

describe('newId', () => {
  it('refuses an unknown kind with invalid_request naming the kinds it knows', () => {
    let caught: unknown = null;
    try {
      newId('sess' as IdKind);
    } catch (error) {
      caught = error;
    }
    expect(isAgentStateError(caught)).toBe(true);
    if (!isAgentStateError(caught)) return;
    expect(caught.code).toBe('invalid_request');
    expect(caught.message).toContain('"sess"');
    for (const kind of ['session', 'task', 'action', 'checkpoint']) expect(caught.message).toContain(kind);
    expect(newId('session')).toMatch(/^sess_[a-z2-7]{26}$/);
  });
});
