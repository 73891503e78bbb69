/**
 * The real stores the context and memory tests run against: `memory:`, `sqlite:` (a file in a fresh
 * temp dir), PostgreSQL (a fresh schema in AGENTSTATE_TEST_POSTGRES_URL, dropped afterwards) and Redis (a fresh
 * key prefix in AGENTSTATE_TEST_REDIS_URL, its keys removed afterwards). Each test gets a fresh tenant and user ids, so stores may be shared safely.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import pg from 'pg';
import type { Clock } from '../../src/core/clock.js';
import type { Task, TaskState } from '../../src/core/model.js';
import { createMemoryStore } from '../../src/store/memory/index.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import type { NewMessage, Scope, StateStore } from '../../src/store/types.js';

export interface StoreKind {
  readonly name: string;
  open(options?: { clock?: Clock }): Promise<{ store: StateStore; cleanup: () => Promise<void> }>;
}

export const STORES: readonly StoreKind[] = [
  {
    name: 'memory',
    async open(options = {}) {
      const store = createMemoryStore(options);
      return { store, cleanup: () => store.close() };
    },
  },
  {
    name: 'sqlite',
    async open(options = {}) {
      const dir = mkdtempSync(join(tmpdir(), 'agentstate-ctx-'));
      const store = await openSqliteStore(join(dir, 'test.db'), options);
      return {
        store,
        cleanup: async () => {
          await store.close();
          rmSync(dir, { recursive: true, force: true });
        },
      };
    },
  },
  {
    name: 'postgres',
    async open(options = {}) {
      // A fresh schema per test file, dropped afterwards: other data in the database is never touched.
      const { openPostgresStore } = await import('../../src/store/postgres/index.js');
      const url = process.env.AGENTSTATE_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
      const schema = `ctx_test_${Math.random().toString(36).slice(2, 10)}`;
      const store = await openPostgresStore({ ...options, url, schema, max: 4 });
      return {
        store,
        cleanup: async () => {
          await store.close();
          const client = new pg.Client({ connectionString: url });
          await client.connect();
          await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
          await client.end();
        },
      };
    },
  },
  {
    name: 'redis',
    async open(options = {}) {
      // A fresh key prefix per test file; its keys are removed afterwards (SCAN, never KEYS).
      const { openRedisStore } = await import('../../src/store/redis/index.js');
      const url = process.env.AGENTSTATE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
      const prefix = `ctxtest_${Math.random().toString(36).slice(2, 10)}`;
      const store = await openRedisStore(url, { ...options, prefix });
      return {
        store,
        cleanup: async () => {
          await store.close();
          const redis = new Redis(url);
          try {
            let cursor = '0';
            do {
              const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
              cursor = next;
              if (keys.length > 0) await redis.unlink(...keys);
            } while (cursor !== '0');
          } finally {
            redis.disconnect();
          }
        },
      };
    },
  },
];

export function freshScope(user = 'user'): Scope {
  const r = Math.random().toString(36).slice(2, 10);
  return { tenant_id: `t_${r}`, user_id: `${user}_${r}` };
}

/** Moves a task along allowed transitions to `target` (INIT -> COLLECTING -> CONFIRMING -> EXECUTING -> DONE). */
export async function driveTask(
  store: StateStore,
  scope: Scope,
  task: Task,
  target: TaskState,
): Promise<Task> {
  const path: TaskState[] = ['INIT', 'COLLECTING', 'CONFIRMING', 'EXECUTING', 'DONE'];
  let current = task;
  for (const state of path.slice(path.indexOf(current.state) + 1, path.indexOf(target) + 1)) {
    current = await store.updateTask(scope, current.id, current.version, { state, cause: 'test' });
  }
  return current;
}

/** Appends messages in batches (the contract allows any count per call; batches keep transactions small). */
export async function appendAll(
  store: StateStore,
  scope: Scope,
  sessionId: string,
  list: readonly NewMessage[],
) {
  for (let i = 0; i < list.length; i += 500)
    await store.appendMessages(scope, sessionId, list.slice(i, i + 500));
}

/** A chat of `turns` turns: user asks, assistant calls a tool, the tool answers, assistant replies. */
export function chatTurns(turns: number, start = 0): NewMessage[] {
  const out: NewMessage[] = [];
  for (let i = start; i < start + turns; i++) {
    out.push({ role: 'user', content: `Turn ${i}: I want flight number ${i} to Tokyo, please check seats.` });
    out.push({
      role: 'assistant',
      content: '',
      tool_calls: [{ id: `call_${i}`, name: 'airline.search', arguments: { flight: i, to: 'NRT' } }],
    });
    out.push({
      role: 'tool',
      content: `{"flight":${i},"seats":${i % 7}}`,
      tool_call_id: `call_${i}`,
      name: 'airline.search',
    });
    out.push({ role: 'assistant', content: `Flight ${i} has ${i % 7} seats left.` });
  }
  return out;
}
