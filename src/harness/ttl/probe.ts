/**
 * Looks at a store from outside the StateStore API, through its own driver: how many sessions and
 * messages of one tenant are still stored (expired or not), and how much storage the store uses.
 *
 * - memory: the store's Maps (MemoryStore.rawCounts); bytes = V8 heap used after a full GC.
 * - sqlite: a second connection to the file; bytes = pages in use (page_count - freelist_count) x page_size.
 * - postgres: its own connection; bytes = pg_total_relation_size of every table of the schema: each
 *   table's heap with its free space map and visibility map forks, its TOAST table with its index, and all
 *   its indexes (sequences, one page each and never growing, are left out). `extra` splits it into those.
 * - redis: its own connection; keys by SCAN under the tenant's hash tag; bytes = MEMORY USAGE of every key
 *   under the prefix (`used_memory` of the whole server is reported beside it: other users share it).
 * - tiered: the Redis probe for sessions and messages, bytes of both tiers added.
 */
import v8 from 'node:v8';
import vm from 'node:vm';
import Database from 'better-sqlite3';
import { Redis } from 'ioredis';
import pg from 'pg';
import { MemoryStore } from '../../store/memory/index.js';
import { parsePostgresUrl } from '../../store/postgres/index.js';
import { parseRedisUrl } from '../../store/redis/index.js';
import { escapeKeyPart } from '../../store/redis/keys.js';
import { parseTieredUrl } from '../../store/tiered/url.js';
import type { StateStore } from '../../store/types.js';

export interface Residue {
  readonly sessions: number;
  readonly messages: number;
}

export interface Probe {
  /** What the store holds of `tenant`, expired or not. */
  count(tenant: string): Promise<Residue>;
  /** Storage used, in bytes (see the header for what each store counts). */
  bytes(): Promise<number>;
  /** Extra figures worth reporting (Redis used_memory, SQLite file size, ...). */
  extra(): Promise<Record<string, number>>;
  close(): Promise<void>;
}

let gc: (() => void) | null = null;
function fullGc(): void {
  if (gc === null) {
    v8.setFlagsFromString('--expose-gc');
    gc = vm.runInNewContext('gc') as () => void;
  }
  gc();
  gc();
}

function memoryProbe(store: StateStore): Probe {
  if (!(store instanceof MemoryStore)) throw new Error('memory: probe needs the MemoryStore itself');
  return {
    count: async (tenant) => store.rawCounts(tenant),
    bytes: async () => {
      fullGc();
      return process.memoryUsage().heapUsed;
    },
    extra: async () => ({ rss_bytes: process.memoryUsage().rss }),
    close: async () => undefined,
  };
}

function sqliteProbe(path: string): Probe {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  const pragma = (name: string) => Number(db.pragma(name, { simple: true }));
  const one = (sql: string, tenant: string) => Number((db.prepare(sql).get(tenant) as { n: number }).n);
  return {
    count: async (tenant) => ({
      sessions: one('SELECT COUNT(*) AS n FROM sessions WHERE tenant_id = ?', tenant),
      messages: one('SELECT COUNT(*) AS n FROM messages WHERE tenant_id = ?', tenant),
    }),
    bytes: async () => (pragma('page_count') - pragma('freelist_count')) * pragma('page_size'),
    extra: async () => ({
      page_count: pragma('page_count'),
      freelist_count: pragma('freelist_count'),
      file_bytes: pragma('page_count') * pragma('page_size'),
      auto_vacuum: pragma('auto_vacuum'),
    }),
    close: async () => {
      db.close();
    },
  };
}

function postgresProbe(url: string): Probe {
  const { connectionString, schema } = parsePostgresUrl(url);
  const name = schema ?? 'agentstate';
  const client = new pg.Client({ connectionString });
  const connected = client.connect();
  const count = async (table: string, tenant: string) => {
    await connected;
    const result = await client.query(
      `SELECT COUNT(*)::int AS n FROM "${name}".${table} WHERE tenant_id = $1`,
      [tenant],
    );
    return Number(result.rows[0].n);
  };
  const bytes = async () => {
    await connected;
    const result = await client.query(
      `SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0)::bigint AS n FROM pg_class c
        JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r'`,
      [name],
    );
    return Number(result.rows[0].n);
  };
  const parts = async () => {
    await connected;
    const result = await client.query(
      `SELECT COALESCE(SUM(pg_relation_size(c.oid, 'main')), 0)::bigint AS heap_bytes,
          COALESCE(SUM(pg_relation_size(c.oid, 'fsm')), 0)::bigint AS fsm_bytes,
          COALESCE(SUM(pg_relation_size(c.oid, 'vm')), 0)::bigint AS vm_bytes,
          COALESCE(SUM(pg_indexes_size(c.oid)), 0)::bigint AS index_bytes,
          COALESCE(SUM(CASE WHEN c.reltoastrelid = 0 THEN 0 ELSE pg_total_relation_size(c.reltoastrelid) END), 0)::bigint AS toast_bytes
        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r'`,
      [name],
    );
    const row = result.rows[0] as Record<string, string>;
    return Object.fromEntries(Object.entries(row).map(([key, value]) => [key, Number(value)]));
  };
  return {
    count: async (tenant) => ({
      sessions: await count('sessions', tenant),
      messages: await count('messages', tenant),
    }),
    bytes,
    extra: parts,
    close: async () => {
      await connected.catch(() => undefined);
      await client.end();
    },
  };
}

async function scanAll(redis: Redis, pattern: string): Promise<string[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    keys.push(...batch);
  } while (cursor !== '0');
  return keys;
}

function redisProbe(url: string): Probe {
  const { connection, prefix } = parseRedisUrl(url);
  const base = prefix ?? 'agentstate';
  const redis = new Redis(connection, { lazyConnect: false, maxRetriesPerRequest: 2 });
  return {
    count: async (tenant) => {
      const tag = `${base}:{${escapeKeyPart(tenant)}:*}`;
      const [sessions, messages] = await Promise.all([
        scanAll(redis, `${tag}:s:*`),
        scanAll(redis, `${tag}:m:*`),
      ]);
      let stored = 0;
      for (const key of messages) stored += await redis.llen(key);
      return { sessions: sessions.length, messages: stored };
    },
    bytes: async () => {
      const keys = await scanAll(redis, `${base}:*`);
      let total = 0;
      for (let i = 0; i < keys.length; i += 200) {
        const pipeline = redis.pipeline();
        for (const key of keys.slice(i, i + 200)) pipeline.memory('USAGE', key);
        for (const [, value] of (await pipeline.exec()) ?? []) total += Number(value ?? 0);
      }
      return total;
    },
    extra: async () => {
      const info = await redis.info('memory');
      const used = /used_memory:(\d+)/.exec(info)?.[1];
      const keys = await scanAll(redis, `${base}:*`);
      return { redis_used_memory: Number(used ?? 0), redis_keys_under_prefix: keys.length };
    },
    close: async () => {
      redis.disconnect();
    },
  };
}

function tieredProbe(url: string): Probe {
  const parts = parseTieredUrl(url);
  const hot = redisProbe(parts.redis);
  const durable = postgresProbe(parts.postgres);
  return {
    count: (tenant) => hot.count(tenant),
    bytes: async () => (await hot.bytes()) + (await durable.bytes()),
    extra: async () => ({
      ...(await hot.extra()),
      redis_prefix_bytes: await hot.bytes(),
      postgres_bytes: await durable.bytes(),
    }),
    close: async () => {
      await Promise.all([hot.close(), durable.close()]);
    },
  };
}

/** The probe for the store opened from `url` (`store` is needed for memory:, which lives in this process). */
export function openProbe(url: string, store: StateStore): Probe {
  if (url.startsWith('memory:')) return memoryProbe(store);
  if (url.startsWith('sqlite:')) return sqliteProbe(url.slice('sqlite:'.length));
  if (url.startsWith('postgres:') || url.startsWith('postgresql:')) return postgresProbe(url);
  if (url.startsWith('tiered:') || /[?&]durable=/.test(url)) return tieredProbe(url);
  if (url.startsWith('redis:') || url.startsWith('rediss:')) return redisProbe(url);
  throw new Error(`no probe for ${url}`);
}
