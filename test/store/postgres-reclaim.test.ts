/**
 * PostgreSQL storage reclaim after sweeps: a sweep that emptied tables truncates their heaps (VACUUM) and
 * rebuilds their bloated indexes (REINDEX CONCURRENTLY); only one instance compacts a schema at a time, and
 * one that finds the lock taken skips and tries again after its next sweep.
 */
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.js';
import { openPostgresStore } from '../../src/store/postgres/index.js';
import { freshIndexPages, indexBloated } from '../../src/store/postgres/reclaim.js';
import type { StateStore } from '../../src/store/types.js';
import { adminQuery, dropSchema, POSTGRES_URL, randomSchema, schemaUrl } from './postgres-env.js';

const schemas: string[] = [];
afterAll(async () => {
  for (const schema of schemas) await dropSchema(schema);
});

const PAST = '2020-01-01T00:00:00.000Z';
const scope = { tenant_id: 'tenant', user_id: 'user' };

/** A new store (and schema) holding `count` expired sessions of two messages each, written in bulk. */
async function expiredStore(count: number): Promise<{ schema: string; store: StateStore }> {
  const schema = randomSchema();
  schemas.push(schema);
  const store = await openPostgresStore({ url: schemaUrl(schema), clock: new ManualClock() });
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
async function pages(schema: string): Promise<Record<string, number>> {
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

async function count(schema: string, table: string): Promise<number> {
  return (await adminQuery(`SELECT count(*)::int AS n FROM "${schema}".${table}`)).rows[0].n;
}

async function invalidIndexes(schema: string): Promise<number> {
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
async function untilReclaimed(store: StateStore, schema: string): Promise<void> {
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
async function openSnapshot(): Promise<{ release: () => Promise<void> }> {
  const client = new pg.Client({ connectionString: POSTGRES_URL });
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

describe('postgres reclaim heuristics', () => {
  it('a fresh btree of no entries is its metapage; of many, about what its entries fill', () => {
    expect(freshIndexPages(0, 30, 8192)).toBe(1);
    // 16-byte keys: entries of 8 + 16 + 4 bytes, 262 a leaf at 90 % of 8152 usable bytes
    expect(freshIndexPages(262, 16, 8192)).toBe(2);
    expect(freshIndexPages(263, 16, 8192)).toBe(1 + 2 + 1);
    expect(freshIndexPages(100_000, 16, 8192)).toBe(1 + 382 + 4);
  });

  it('rebuilds an index at twice what a fresh one needs, never on unknown widths', () => {
    const figures = { tuples: 0, keyBytes: null, blockSize: 8192 };
    expect(indexBloated({ ...figures, pages: 1 })).toBe(false);
    expect(indexBloated({ ...figures, pages: 2 })).toBe(true);
    const live = { tuples: 100_000, keyBytes: 16, blockSize: 8192 };
    expect(indexBloated({ ...live, pages: 600 })).toBe(false);
    expect(indexBloated({ ...live, pages: 773 })).toBe(false);
    expect(indexBloated({ ...live, pages: 774 })).toBe(true);
    expect(indexBloated({ ...live, keyBytes: null, pages: 5000 })).toBe(false);
  });
});

describe('postgres reclaim after a sweep', () => {
  it('a sweep that emptied sessions and messages truncates both and rebuilds their indexes', async () => {
    const { schema, store } = await expiredStore(3000);
    const before = await pages(schema);
    expect(before.messages).toBeGreaterThan(50);
    expect(before.messages_pkey).toBeGreaterThan(10);
    expect(await store.sweepExpired(100_000)).toBe(3000);
    expect(await count(schema, 'messages')).toBe(0);
    // Another test's transaction open in the database keeps the deleted rows from VACUUM until it ends;
    // the store then tries again after each sweep (with nothing new to delete).
    await untilReclaimed(store, schema);
    const after = await pages(schema);
    expect(Object.keys(after).sort()).toEqual(Object.keys(before).sort());
    for (const [name, n] of Object.entries(after)) {
      // heaps truncated to nothing; every index rebuilt to its metapage
      expect(n, name).toBe(name === 'sessions' || name === 'messages' ? 0 : 1);
    }
    await store.close();
  });

  it('skips while another instance holds the reclaim lock, and reclaims after its next sweep', async () => {
    const { schema, store } = await expiredStore(1000);
    const holder = new pg.Client({ connectionString: POSTGRES_URL });
    await holder.connect();
    try {
      const lock = `agentstate:reclaim:${schema}`;
      await holder.query('SELECT pg_advisory_lock(hashtext($1))', [lock]);
      const full = await pages(schema);
      expect(await store.sweepExpired(100_000)).toBe(1000);
      // swept, but nothing given back: the other instance holds the lock
      expect((await pages(schema)).messages).toBe(full.messages);
      await holder.query('SELECT pg_advisory_unlock(hashtext($1))', [lock]);
      await untilReclaimed(store, schema);
    } finally {
      await holder.end();
      await store.close();
    }
  });

  it('a VACUUM that an older snapshot kept from removing the rows is tried again after the next sweep', async () => {
    const { schema, store } = await expiredStore(1000);
    const snapshot = await openSnapshot();
    try {
      const full = await pages(schema);
      expect(await store.sweepExpired(100_000)).toBe(1000);
      expect((await pages(schema)).messages).toBe(full.messages);
    } finally {
      await snapshot.release();
    }
    await untilReclaimed(store, schema);
    await store.close();
  });

  it('an index rebuild held up by an older transaction gives up, leaves no half-built index, and is done later', async () => {
    const { schema, store } = await expiredStore(1000);
    const holder = new pg.Client({ connectionString: POSTGRES_URL });
    await holder.connect();
    const lock = `agentstate:reclaim:${schema}`;
    await holder.query('SELECT pg_advisory_lock(hashtext($1))', [lock]);
    expect(await store.sweepExpired(100_000)).toBe(1000);
    // a transaction that began after the deletes: VACUUM may remove the rows, a concurrent rebuild must wait for it
    const snapshot = await openSnapshot();
    try {
      await holder.query('SELECT pg_advisory_unlock(hashtext($1))', [lock]);
      const started = Date.now();
      expect(await store.sweepExpired(100_000)).toBe(0);
      // it waited for the transaction LOCK_TIMEOUT (2 s) at most, then gave up (not rebuilt)
      expect(Date.now() - started).toBeLessThan(15_000);
      expect((await pages(schema)).messages_pkey).toBeGreaterThan(1);
      expect(await invalidIndexes(schema)).toBe(0);
    } finally {
      await snapshot.release();
      await holder.end();
    }
    await untilReclaimed(store, schema);
    expect((await pages(schema)).messages_pkey).toBe(1);
    expect(await invalidIndexes(schema)).toBe(0);
    await store.close();
  });

  it('two instances sweeping and reclaiming at once delete every session once and both succeed', async () => {
    const { schema, store } = await expiredStore(4000);
    const other = await openPostgresStore({ url: schemaUrl(schema), clock: new ManualClock() });
    const live = await store.createSession(scope, { ttl_seconds: 3600 });
    await store.appendMessages(scope, live.id, [{ role: 'user', content: 'still here' }]);
    const removed = await Promise.all([store.sweepExpired(100_000), other.sweepExpired(100_000)]);
    expect(removed[0] + removed[1]).toBe(4000);
    expect(await count(schema, 'sessions')).toBe(1);
    expect(await count(schema, 'messages')).toBe(1);
    expect((await store.listMessages(scope, live.id)).map((m) => m.content)).toEqual(['still here']);
    expect(await invalidIndexes(schema)).toBe(0);
    await Promise.all([store.close(), other.close()]);
  });
});
