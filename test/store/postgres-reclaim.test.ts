/**
 * PostgreSQL storage reclaim after sweeps: a sweep that emptied tables truncates their heaps (VACUUM) and
 * rebuilds their bloated indexes (REINDEX CONCURRENTLY); only one instance compacts a schema at a time, and
 * one that finds the lock taken skips and tries again after its next sweep. A long transaction holds no
 * sweep up and leaves no half-built index behind; a failed reclaim never fails its sweep. In a database of
 * its own: the reclaim looks at every transaction of the database.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.js';
import { openPostgresStore } from '../../src/store/postgres/index.js';
import {
  freshIndexPages,
  indexBloated,
  ReclaimState,
  reclaimPostgres,
} from '../../src/store/postgres/reclaim.js';
import { SqlCoreStore } from '../../src/store/sql/core-store.js';
import { randomSchema, schemaUrl } from './postgres-env.js';
import {
  adminQuery,
  count,
  dbUrl,
  deadRows,
  expiredStore,
  holdReclaimLock,
  invalidIndexes,
  openReader,
  openSnapshot,
  PAST,
  pages,
  rebuildCopies,
  recordingPool,
  type Statement,
  scope,
  sleep,
  sqlStore,
  untilDeadCounted,
  untilReclaimed,
  useReclaimDatabase,
  waits,
} from './postgres-reclaim-env.js';

let database: { drop: () => Promise<void> } | undefined;
beforeAll(async () => {
  database = await useReclaimDatabase();
}, 30_000);
afterAll(async () => {
  await database?.drop();
});

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

  it('a table whose rebuild failed skips its rebuilds for 4 reclaims, twice as many after each failure in a row', () => {
    const state = new ReclaimState();
    const skipped = () => {
      let n = 0;
      while (!state.mayRebuild('messages')) n++;
      return n;
    };
    expect(state.mayRebuild('messages')).toBe(true);
    state.failed('messages');
    expect(state.mayRebuild('sessions')).toBe(true);
    expect(skipped()).toBe(4);
    state.failed('messages');
    expect(skipped()).toBe(8);
    for (let i = 0; i < 10; i++) state.failed('messages');
    expect(skipped()).toBe(64);
    state.succeeded('messages');
    state.failed('messages');
    expect(skipped()).toBe(4);
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
    const holder = new pg.Client({ connectionString: dbUrl() });
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
    const holder = new pg.Client({ connectionString: dbUrl() });
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
      // It waited for the transaction LOCK_TIMEOUT (2 s) at most, then gave up (not rebuilt). Without the
      // timeout the rebuild would wait for the snapshot until the test's own timeout (it is released only
      // below). The sweep takes about 2.1 s here; 15 s holds on a loaded machine and still tells the two apart.
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
    const other = await openPostgresStore({ url: schemaUrl(schema, dbUrl()), clock: new ManualClock() });
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

  it('a long transaction that read the table holds no sweep up and leaves no rebuild copy; a sweep after it rebuilds', async () => {
    const statements: Statement[] = [];
    const pool = recordingPool(statements);
    const { schema, store } = await expiredStore(5000, { pool });
    const lock = await holdReclaimLock(schema);
    expect(await store.sweepExpired(100_000)).toBe(5000);
    const reader = await openReader(schema);
    try {
      await lock.release();
      const before = await pages(schema);
      const from = statements.length;
      for (let i = 0; i < 3; i++) expect(await store.sweepExpired(100_000)).toBe(0);
      // Each sweep vacuums messages again (still counted), but without the truncation that would wait 5 s
      // for the reader's lock; no rebuild waits LOCK_TIMEOUT for the reader's snapshot; nothing gave up.
      // (What the statements are, not how long they took: the time of a sweep says little on a busy machine.)
      expect(waits(statements.slice(from), 'messages')).toEqual({
        vacuums: Array(3).fill(`VACUUM (TRUNCATE false) "${schema}"."messages"`),
        rebuildsAndDrops: [],
        failed: [],
      });
      expect(await rebuildCopies(schema)).toEqual([]);
      expect(await invalidIndexes(schema)).toBe(0);
      expect((await pages(schema)).messages_pkey).toBe(before.messages_pkey);
    } finally {
      await reader.release();
    }
    await untilReclaimed(store, schema);
    expect(await rebuildCopies(schema)).toEqual([]);
    await store.close();
    await pool.end();
  });

  it('drops the copy a rebuild that died left, at the next reclaim once no long transaction holds its table', async () => {
    const statements: Statement[] = [];
    const pool = recordingPool(statements);
    const { schema, store } = await expiredStore(1000, { pool });
    // another session's REINDEX gave up waiting for an older snapshot: its copy stays, invalid
    const snapshot = await openSnapshot();
    const admin = new pg.Client({ connectionString: dbUrl() });
    await admin.connect();
    try {
      await admin.query("SET lock_timeout = '300ms'");
      await expect(admin.query(`REINDEX INDEX CONCURRENTLY "${schema}".messages_pkey`)).rejects.toThrow(
        /lock/,
      );
    } finally {
      await admin.end();
      await snapshot.release();
    }
    expect(await rebuildCopies(schema)).toEqual(['messages_pkey_ccnew']);
    const reader = await openReader(schema);
    try {
      const from = statements.length;
      expect(await store.sweepExpired(100_000)).toBe(1000);
      // the drop would wait for the reader: not tried; nor a truncation of messages or a rebuild, which
      // would wait for it too; nothing gave up on a lock
      expect(waits(statements.slice(from), 'messages')).toEqual({
        vacuums: [`VACUUM (TRUNCATE false) "${schema}"."messages"`],
        rebuildsAndDrops: [],
        failed: [],
      });
      expect(await rebuildCopies(schema)).toEqual(['messages_pkey_ccnew']);
    } finally {
      await reader.release();
    }
    await untilReclaimed(store, schema);
    expect(await rebuildCopies(schema)).toEqual([]);
    expect(await invalidIndexes(schema)).toBe(0);
    // the copy went with a drop once the reader had ended
    expect(
      statements.some((s) => s.sql.startsWith('DROP INDEX') && s.sql.includes('messages_pkey_ccnew')),
    ).toBe(true);
    await store.close();
    await pool.end();
  });

  it('a database statement_timeout cancels no step of the reclaim', async () => {
    const name = new URL(dbUrl()).pathname.slice(1);
    await adminQuery(`ALTER DATABASE "${name}" SET statement_timeout = '400ms'`);
    try {
      const { schema, store } = await expiredStore(1000);
      const lock = await holdReclaimLock(schema);
      expect(await store.sweepExpired(100_000)).toBe(1000);
      // a rebuild now waits for this snapshot longer than the statement timeout
      const snapshot = await openSnapshot();
      try {
        await lock.release();
        expect(await store.sweepExpired(100_000)).toBe(0);
        // the rebuild gave up at the lock timeout (not cancelled half-way) and its copy was dropped
        expect(await rebuildCopies(schema)).toEqual([]);
        expect(await invalidIndexes(schema)).toBe(0);
        expect(sqlStore(store).reclaimErrors.count).toBe(0);
      } finally {
        await snapshot.release();
      }
      await untilReclaimed(store, schema);
      expect(sqlStore(store).reclaimErrors.count).toBe(0);
      await store.close();
    } finally {
      await adminQuery(`ALTER DATABASE "${name}" RESET statement_timeout`);
    }
  });

  it("a reclaim that fails keeps its sweep and the sweep's count, reports the error, and leaves no copy", async () => {
    // The rebuild must start and then wait for the snapshot below, however slowly this machine gets there:
    // the store counts a transaction as long only after 10 minutes, and its rebuild waits up to 10 minutes
    // for the snapshot (not the 2 s by default, which a stalled disk let pass before the watcher saw it).
    const { schema, store } = await expiredStore(1000, {
      reclaimLongTransactionMs: 600_000,
      reclaimLockTimeoutMs: 600_000,
    });
    expect(store).toBeInstanceOf(SqlCoreStore);
    const errors: unknown[] = [];
    sqlStore(store).onReclaimError = (error) => errors.push(error);
    const lock = await holdReclaimLock(schema);
    expect(await store.sweepExpired(100_000)).toBe(1000);
    await untilDeadCounted(schema, { sessions: 1000, messages: 2000 });
    // the rebuild waits for this snapshot, and is cancelled meanwhile
    const snapshot = await openSnapshot();
    await lock.release();
    await adminQuery(
      `INSERT INTO "${schema}".sessions (id, tenant_id, user_id, agent, status, context, version, ttl_seconds,
          created_at, updated_at, last_activity_at, expires_at, ended_at, message_count)
        SELECT 'sess_more' || g, 't', 'u', NULL, 'active', '{}', 1, 60, $1, $1, $1, $1, NULL, 0
        FROM generate_series(1, 300) g`,
      [PAST],
    );
    let cancelled = false;
    let swept = false;
    const watcher = (async () => {
      while (!cancelled && !swept) {
        const result = await adminQuery(
          `SELECT pg_cancel_backend(pid) AS ok FROM pg_stat_activity
            WHERE datname = current_database() AND pid <> pg_backend_pid()
              AND query LIKE 'REINDEX INDEX CONCURRENTLY%' AND wait_event_type = 'Lock'`,
        );
        cancelled = result.rows.some((row) => row.ok === true);
        await sleep(50);
      }
    })();
    try {
      expect(await store.sweepExpired(100_000)).toBe(300);
    } finally {
      swept = true;
      await watcher;
      await snapshot.release();
    }
    // (When it was not: what the statistics showed, to tell a VACUUM that had to leave rows from the rest.)
    expect(cancelled, JSON.stringify(await deadRows(schema))).toBe(true);
    expect(errors).toHaveLength(1);
    expect(sqlStore(store).reclaimErrors.count).toBe(1);
    expect(String((errors[0] as { cause?: unknown }).cause)).toMatch(/cancel/);
    expect(await rebuildCopies(schema)).toEqual([]);
    expect(await count(schema, 'messages')).toBe(0);
    await untilReclaimed(store, schema);
    await store.close();
  });

  it('leaves the tables of another owner alone (a VACUUM by a non-owner only warns), and counts them done', async () => {
    const { schema, store } = await expiredStore(1000);
    await store.close();
    const role = `as_${randomSchema()}`;
    await adminQuery(`CREATE ROLE "${role}" LOGIN`);
    const url = new URL(dbUrl());
    url.username = role;
    const client = new pg.Client({ connectionString: url.toString() });
    try {
      await adminQuery(`GRANT USAGE ON SCHEMA "${schema}" TO "${role}"`);
      await adminQuery(
        `GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA "${schema}" TO "${role}"`,
      );
      await client.connect();
      const notices: string[] = [];
      client.on('notice', (notice) => notices.push(notice.message ?? ''));
      const removed = await client.query(`DELETE FROM "${schema}".messages`);
      await client.query(`DELETE FROM "${schema}".sessions`);
      const deleted = new Map([
        ['sessions', 1000],
        ['messages', removed.rowCount ?? 0],
      ]);
      const done = await reclaimPostgres(client as unknown as pg.PoolClient, schema, deleted);
      expect(done.sort()).toEqual(['messages', 'sessions']);
      expect(notices).toEqual([]);
    } finally {
      await client.end();
      await adminQuery(`DROP OWNED BY "${role}"`);
      await adminQuery(`DROP ROLE "${role}"`);
    }
  });
});
