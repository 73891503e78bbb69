/** The PostgreSQL reclaim tests' database, stores and probes of its storage (postgres-reclaim.test.ts). */
import pg from 'pg';
import { expect } from 'vitest';
import { ManualClock } from '../../src/core/clock.js';
import { openPostgresStore } from '../../src/store/postgres/index.js';
import { SqlCoreStore } from '../../src/store/sql/core-store.js';
import type { StateStore } from '../../src/store/types.js';
import { adminQuery as adminQueryOn, createDatabase, randomSchema, schemaUrl } from './postgres-env.js';

let database: { url: string; drop: () => Promise<void> } | undefined;

/** Creates the test's own database (in its beforeAll); `drop` removes it. */
export async function useReclaimDatabase(): Promise<{ drop: () => Promise<void> }> {
  const made = await createDatabase();
  database = made;
  return { drop: () => made.drop() };
}

export function dbUrl(): string {
  if (database === undefined) throw new Error('the test database is not created');
  return database.url;
}
export const adminQuery = (text: string, values: unknown[] = []) => adminQueryOn(text, values, dbUrl());

export const PAST = '2020-01-01T00:00:00.000Z';
export const scope = { tenant_id: 'tenant', user_id: 'user' };

/** One statement a connection of a recording pool ran: its text and, once it failed, its SQLSTATE. */
export interface Statement {
  readonly sql: string;
  failed: string | null;
}

/** A pool on the test database whose connections add every statement they run to `log`. */
export function recordingPool(log: Statement[]): pg.Pool {
  const pool = new pg.Pool({ connectionString: dbUrl(), max: 4 });
  pool.on('error', () => undefined);
  pool.on('connect', (client) => {
    const run = client.query.bind(client) as (...args: unknown[]) => unknown;
    const query = (...args: unknown[]): unknown => {
      const [first] = args;
      const sql = typeof first === 'string' ? first : String((first as { text?: unknown }).text);
      const statement: Statement = { sql, failed: null };
      log.push(statement);
      const result = run(...args);
      // Only noted here: the caller gets the rejection as before.
      if (result instanceof Promise) {
        result.catch((error: unknown) => {
          statement.failed = String((error as { code?: unknown } | null)?.code ?? 'error');
        });
      }
      return result;
    };
    Object.assign(client, { query });
  });
  return pool;
}

export interface ExpiredOptions {
  readonly reclaimLongTransactionMs?: number;
  readonly reclaimLockTimeoutMs?: number;
  /** The store's pool (the caller ends it after the store is closed); its own on the URL when absent. */
  readonly pool?: pg.Pool;
}

/** A new store (and schema) holding `count` expired sessions of two messages each, written in bulk. */
export async function expiredStore(
  count: number,
  options: ExpiredOptions = {},
): Promise<{ schema: string; store: StateStore }> {
  const schema = randomSchema();
  const { reclaimLongTransactionMs, reclaimLockTimeoutMs, pool } = options;
  const store = await openPostgresStore({
    ...(pool === undefined ? { url: schemaUrl(schema, dbUrl()) } : { pool, schema }),
    clock: new ManualClock(),
    ...(reclaimLongTransactionMs === undefined ? {} : { reclaimLongTransactionMs }),
    ...(reclaimLockTimeoutMs === undefined ? {} : { reclaimLockTimeoutMs }),
  });
  // Only the store's reclaim cleans these tables: an autovacuum of its own (which a busy server starts at
  // any time) would change what the reclaim finds.
  for (const table of ['sessions', 'messages']) {
    await adminQuery(`ALTER TABLE "${schema}".${table} SET (autovacuum_enabled = false)`);
  }
  await adminQuery(
    `INSERT INTO "${schema}".sessions (id, tenant_id, user_id, agent, status, context, version, ttl_seconds,
        created_at, updated_at, last_activity_at, expires_at, ended_at, message_count)
      SELECT 'sess_old' || g, 't' || (g % 7), 'u', NULL, 'active', '{}', 1, 60, $1, $1, $1, $1, NULL, 2
      FROM generate_series(1, $2) g`,
    [PAST, count],
  );
  await adminQuery(
    `INSERT INTO "${schema}".messages (tenant_id, session_id, seq, id, user_id, role, content, metadata, created_at)
      SELECT 't' || (g % 7), 'sess_old' || g, s, 'msg_old' || g || '_' || s, 'u', 'user', repeat('old ', 40), '{}', $1
      FROM generate_series(1, $2) g, generate_series(1, 2) s`,
    [PAST, count],
  );
  return { schema, store };
}

/** Pages of each table and index of sessions and messages. */
export async function pages(schema: string): Promise<Record<string, number>> {
  const result = await adminQuery(
    `SELECT c.relname AS name, pg_relation_size(c.oid) / current_setting('block_size')::int AS pages
      FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      LEFT JOIN pg_index x ON x.indexrelid = c.oid
      WHERE n.nspname = $1 AND (c.relname IN ('sessions', 'messages')
        OR x.indrelid IN ($2::regclass, $3::regclass))`,
    [schema, `"${schema}".sessions`, `"${schema}".messages`],
  );
  return Object.fromEntries(result.rows.map((row) => [row.name, Number(row.pages)]));
}

export async function count(schema: string, table: string): Promise<number> {
  return (await adminQuery(`SELECT count(*)::int AS n FROM "${schema}".${table}`)).rows[0].n;
}

export async function invalidIndexes(schema: string): Promise<number> {
  const invalid = await adminQuery(
    `SELECT count(*)::int AS n FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid
      JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND NOT x.indisvalid`,
    [schema],
  );
  return invalid.rows[0].n;
}

/**
 * Sweeps (nothing left to delete) until the sessions and messages heaps are empty and each of their
 * indexes is its metapage only; 20 s at most.
 */
export async function untilReclaimed(store: StateStore, schema: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    expect(await store.sweepExpired(100_000)).toBe(0);
    const now = await pages(schema);
    if (Object.entries(now).every(([name, n]) => n === (name === 'sessions' || name === 'messages' ? 0 : 1)))
      return;
    if (Date.now() > deadline) throw new Error(`not reclaimed: ${JSON.stringify(now)}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** A snapshot held open on the database (a long transaction elsewhere), until `release`. */
export async function openSnapshot(): Promise<{ release: () => Promise<void> }> {
  const client = new pg.Client({ connectionString: dbUrl() });
  await client.connect();
  await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
  await client.query('SELECT 1');
  return {
    release: async () => {
      await client.query('COMMIT');
      await client.end();
    },
  };
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The indexes of the schema named like the copies a concurrent rebuild makes (`_ccnew`, `_ccold`). */
export async function rebuildCopies(schema: string): Promise<string[]> {
  const result = await adminQuery(
    `SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relkind = 'i' AND c.relname ~ '_cc(new|old)[0-9]*$' ORDER BY 1`,
    [schema],
  );
  return result.rows.map((row) => row.name);
}

/**
 * A transaction that read the schema's messages and stays open (REPEATABLE READ: its snapshot, and its
 * ACCESS SHARE lock on the table, until `release`), older than a second once this returns.
 */
export async function openReader(schema: string): Promise<{ release: () => Promise<void> }> {
  const client = new pg.Client({ connectionString: dbUrl() });
  await client.connect();
  await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
  await client.query(`SELECT count(*) FROM "${schema}".messages`);
  await sleep(1200);
  return {
    release: async () => {
      await client.query('COMMIT');
      await client.end();
    },
  };
}

/** Holds the schema's reclaim lock, so that a sweep deletes and gives nothing back, until `release`. */
export async function holdReclaimLock(schema: string): Promise<{ release: () => Promise<void> }> {
  const holder = new pg.Client({ connectionString: dbUrl() });
  await holder.connect();
  await holder.query('SELECT pg_advisory_lock(hashtext($1))', [`agentstate:reclaim:${schema}`]);
  return { release: () => holder.end() };
}

/** The dead rows PostgreSQL's statistics count in each table of the schema. */
export async function deadRows(schema: string): Promise<Record<string, number>> {
  const result = await adminQuery(
    'SELECT relname AS name, n_dead_tup AS dead FROM pg_stat_user_tables WHERE schemaname = $1',
    [schema],
  );
  return Object.fromEntries(result.rows.map((row) => [String(row.name), Number(row.dead)]));
}

/**
 * Waits until the statistics count the rows a sweep deleted. A backend that reported its counts less than a
 * second before holds the next ones back for up to 10 s (here they came 9.9 s after the sweep): arriving
 * between the reclaim's VACUUM and its check, they read as rows that VACUUM had to leave, and the reclaim
 * rightly leaves the rebuild to the next sweep (what made this test fail now and then in full runs).
 */
export async function untilDeadCounted(schema: string, least: Record<string, number>): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const dead = await deadRows(schema);
    if (Object.entries(least).every(([table, n]) => (dead[table] ?? 0) >= n)) return;
    if (Date.now() > deadline) throw new Error(`dead rows not counted yet: ${JSON.stringify(dead)}`);
    await sleep(100);
  }
}

export function sqlStore(store: StateStore): SqlCoreStore {
  if (!(store instanceof SqlCoreStore)) throw new Error('not an SQL store');
  return store;
}

/**
 * What the statements a sweep issued would have waited for: the VACUUMs of `table` (one that truncates waits
 * up to 5 s for the table's ACCESS EXCLUSIVE lock), index rebuilds and drops of index copies (they wait for
 * every older transaction, up to the lock timeout), and the statements that failed (a lock timeout).
 */
export function waits(issued: readonly Statement[], table: string) {
  return {
    vacuums: issued.filter((s) => /^VACUUM\b/.test(s.sql) && s.sql.endsWith(`."${table}"`)).map((s) => s.sql),
    rebuildsAndDrops: issued.filter((s) => /^(REINDEX|DROP INDEX)\b/.test(s.sql)).map((s) => s.sql),
    failed: issued.filter((s) => s.failed !== null),
  };
}
