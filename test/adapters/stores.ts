/**
 * The real stores the adapter tests run against, each opened by URL through `openStore` (as a user would):
 * `memory:`, `sqlite:` (a file in a fresh temp dir), PostgreSQL (a fresh schema, dropped afterwards) and
 * Redis (a fresh key prefix, its keys removed afterwards) and the tiered store (both of those at once).
 * Tests take fresh tenant and user ids on top.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import pg from 'pg';
import { openStore } from '../../src/store/open.js';
import type { Scope, StateStore } from '../../src/store/types.js';

export const POSTGRES_URL =
  process.env.AGENTSTATE_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
export const REDIS_URL = process.env.AGENTSTATE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

export type StoreName = 'memory' | 'sqlite' | 'postgres' | 'redis' | 'tiered';

export interface OpenedStore {
  readonly store: StateStore;
  /** The URL it was opened with (for child processes and for a second store over the same data). */
  readonly url: string;
  cleanup(): Promise<void>;
}

function suffix(): string {
  return randomUUID().replaceAll('-', '').slice(0, 16);
}

export function freshScope(label = 'user'): Scope {
  const r = suffix();
  return { tenant_id: `t_${r}`, user_id: `${label}_${r}` };
}

async function dropSchema(schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: POSTGRES_URL });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await client.end();
  }
}

async function removePrefix(prefix: string): Promise<void> {
  const redis = new Redis(REDIS_URL);
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
}

/** Opens a fresh store of the given kind. */
export async function openTestStore(name: StoreName): Promise<OpenedStore> {
  switch (name) {
    case 'memory': {
      const store = await openStore('memory:');
      return { store, url: 'memory:', cleanup: () => store.close() };
    }
    case 'sqlite': {
      const dir = mkdtempSync(join(tmpdir(), 'agentstate-adapters-'));
      const url = `sqlite:${join(dir, 'state.db')}`;
      const store = await openStore(url);
      return {
        store,
        url,
        async cleanup() {
          await store.close();
          rmSync(dir, { recursive: true, force: true });
        },
      };
    }
    case 'postgres': {
      const schema = `adapters_${suffix()}`;
      const parsed = new URL(POSTGRES_URL);
      parsed.searchParams.set('schema', schema);
      const url = parsed.toString();
      const store = await openStore(url);
      return {
        store,
        url,
        async cleanup() {
          await store.close();
          await dropSchema(schema);
        },
      };
    }
    case 'tiered': {
      const schema = `adapters_${suffix()}`;
      const prefix = `adapters_${suffix()}`;
      const durable = new URL(POSTGRES_URL);
      durable.searchParams.set('schema', schema);
      const parsed = new URL(REDIS_URL);
      parsed.searchParams.set('prefix', prefix);
      parsed.searchParams.set('durable', durable.toString());
      const url = parsed.toString();
      const store = await openStore(url);
      return {
        store,
        url,
        async cleanup() {
          await store.close();
          await removePrefix(prefix);
          await dropSchema(schema);
        },
      };
    }
    case 'redis': {
      const prefix = `adapters_${suffix()}`;
      const parsed = new URL(REDIS_URL);
      parsed.searchParams.set('prefix', prefix);
      const url = parsed.toString();
      const store = await openStore(url);
      return {
        store,
        url,
        async cleanup() {
          await store.close();
          await removePrefix(prefix);
        },
      };
    }
  }
}
