/**
 * PostgreSQL takes a session's lease and reads its head in one statement when the lease has no row, and
 * reads the head again when it had one: the statement's snapshot can be older than the lease it took (the
 * previous holder's last commit, which frees it, waited for), and the head must hold what that commit wrote.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postgresDriver } from '../../src/store/postgres/driver.js';
import type { SqlDriver, SqlExecutor } from '../../src/store/sql/executor.js';
import { migrate } from '../../src/store/sql/migrate.js';
import { SqlStore } from '../../src/store/sql/store.js';
import type { Scope, SessionHeadOptions } from '../../src/store/types.js';
import { dropSchema, POSTGRES_URL, randomSchema } from './postgres-env.js';

const schema = randomSchema();
const pool = new pg.Pool({ connectionString: POSTGRES_URL, max: 3 });
const RUN_HEAD: SessionHeadOptions = { open_tasks: 20, next_run: true };
let statements = 0;
let store: SqlStore;

function counting(inner: SqlDriver): SqlDriver {
  const wrap = (q: SqlExecutor): SqlExecutor => ({
    all: (sql, params) => {
      statements++;
      return q.all(sql, params);
    },
    get: (sql, params) => {
      statements++;
      return q.get(sql, params);
    },
    run: (sql, params) => {
      statements++;
      return q.run(sql, params);
    },
  });
  return { ...inner, query: wrap(inner.query), transaction: (fn) => inner.transaction((tx) => fn(wrap(tx))) };
}

beforeAll(async () => {
  const inner = postgresDriver({ pool, schema, searchPathSet: false });
  await migrate(inner);
  store = new SqlStore('postgres', counting(inner), {});
});

afterAll(async () => {
  await store.close();
  await pool.end();
  await dropSchema(schema);
});

const scope = (): Scope => ({ tenant_id: `t_${Math.random().toString(36).slice(2, 12)}`, user_id: 'u_1' });

describe('PostgreSQL: a lease and the head in one statement', () => {
  it('takes a free lease and reads the head in one statement', async () => {
    const who = scope();
    const session = await store.createSession(who, { agent: 'flight_booking' });
    await store.appendMessages(who, session.id, [{ role: 'user', content: 'hello' }]);
    statements = 0;
    const taken = await store.acquireLeaseWithHead(
      who,
      `session:${session.id}`,
      'a',
      10_000,
      session.id,
      RUN_HEAD,
    );
    expect(statements).toBe(1);
    expect(taken?.head).toEqual(await store.getSessionHead(who, session.id, RUN_HEAD));
    // A lease that has a row (here its own, renewed): the head is read again, by a statement of its own.
    statements = 0;
    const renewed = await store.acquireLeaseWithHead(
      who,
      `session:${session.id}`,
      'a',
      10_000,
      session.id,
      RUN_HEAD,
    );
    expect(statements).toBe(2);
    expect(renewed?.head).toEqual(taken?.head);
  });

  it('reads the head after a lease it waited for: what the previous holder wrote as it freed it', async () => {
    const who = scope();
    const session = await store.createSession(who, { agent: 'flight_booking' });
    const name = `session:${session.id}`;
    expect(await store.acquireLease(who, name, 'previous', 60_000)).not.toBeNull();
    // The previous holder's last commit: it changes the session and frees the lease, and is slow to commit.
    const holder = new pg.Client({ connectionString: POSTGRES_URL });
    await holder.connect();
    const watcher = new pg.Client({ connectionString: POSTGRES_URL });
    await watcher.connect();
    try {
      await holder.query(`SET search_path TO "${schema}"`);
      await holder.query('BEGIN');
      await holder.query('UPDATE sessions SET version = version + 1 WHERE id = $1', [session.id]);
      await holder.query('DELETE FROM leases WHERE tenant_id = $1 AND name = $2', [who.tenant_id, name]);
      const taking = store.acquireLeaseWithHead(who, name, 'next', 60_000, session.id, RUN_HEAD);
      // Wait until the statement waits for the holder's row lock, then let the holder commit.
      for (let i = 0; i < 200; i++) {
        const waiting = await watcher.query(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%WITH held AS%'`,
        );
        if (waiting.rows[0].n > 0) break;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      await holder.query('COMMIT');
      const taken = await taking;
      expect(taken?.lease.owner).toBe('next');
      expect(taken?.head?.session.version).toBe(session.version + 1);
    } finally {
      await holder.end();
      await watcher.end();
    }
  });
});
