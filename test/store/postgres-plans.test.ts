/**
 * Every statement the sweeps send (expiry and retention), run under EXPLAIN on PostgreSQL against tables
 * of 20 000 rows each: none reads a whole table (no Seq Scan), so a sweep costs what it deletes, not what
 * the tables hold. (SQLite: test/store/sqlite-plans.test.ts.)
 */
import pg from 'pg';
import { afterAll, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.js';
import { postgresDriver } from '../../src/store/postgres/driver.js';
import { SqlCoreStore } from '../../src/store/sql/core-store.js';
import type { SqlDriver, SqlExecutor, SqlParam } from '../../src/store/sql/executor.js';
import { migrate } from '../../src/store/sql/migrate.js';
import { dropSchema, POSTGRES_URL, randomSchema } from './postgres-env.js';

const schema = randomSchema();
const pool = new pg.Pool({ connectionString: POSTGRES_URL, max: 3 });
afterAll(async () => {
  await pool.end();
  await dropSchema(schema);
});

function recording(inner: SqlDriver, seen: Map<string, readonly SqlParam[]>): SqlDriver {
  const note = (sql: string, params: readonly SqlParam[] = []) => {
    seen.set(sql, params);
    return params;
  };
  const wrap = (q: SqlExecutor): SqlExecutor => ({
    all: (sql, params) => q.all(sql, note(sql, params)),
    get: (sql, params) => q.get(sql, note(sql, params)),
    run: (sql, params) => q.run(sql, note(sql, params)),
  });
  return {
    ...inner,
    query: wrap(inner.query),
    transaction: (fn) => inner.transaction((tx) => fn(wrap(tx))),
    snapshot: (fn) => inner.snapshot((tx) => fn(wrap(tx))),
  };
}

const LIVE = '2099-01-01T00:00:00.000Z';
const ROWS = 20_000;

/** ROWS live rows in every table a sweep deletes from, spread over 50 tenants, then ANALYZE. */
const FILL = [
  `INSERT INTO run_events (tenant_id, user_id, session_id, run_id, seq, type, data, created_at, expires_at)
    SELECT 't' || (g % 50), 'u', 'sess_f' || (g % 5000), 'run' || (g % 1000), g, 'run.started', '{}', $1, $1
    FROM generate_series(1, $2) g`,
  `INSERT INTO sessions (id, tenant_id, user_id, agent, status, context, version, ttl_seconds, created_at,
      updated_at, last_activity_at, expires_at, ended_at, message_count)
    SELECT 'sess_f' || g, 't' || (g % 50), 'u', NULL, 'active', '{}', 1, 60, $1, $1, $1, $1, NULL, 2
    FROM generate_series(1, $2) g`,
  `INSERT INTO messages (tenant_id, session_id, seq, id, user_id, role, content, metadata, created_at)
    SELECT 't' || (g % 50), 'sess_f' || g, 1, 'msg_f' || g, 'u', 'user', 'hello', '{}', $1
    FROM generate_series(1, $2) g`,
  `INSERT INTO tasks (id, tenant_id, user_id, session_id, type, state, slots, status_line, data, version,
      created_at, updated_at, closed_at)
    SELECT 'task_f' || g, 't' || (g % 50), 'u', NULL, 't', 'INIT', '{}', '', '{}', 1, $1, $1, NULL
    FROM generate_series(1, $2) g`,
  `INSERT INTO task_events (id, tenant_id, user_id, task_id, from_state, to_state, cause, task_version, at)
    SELECT 'evt_f' || g, 't' || (g % 50), 'u', 'task_f' || g, NULL, 'INIT', 'create', 1, $1
    FROM generate_series(1, $2) g`,
  `INSERT INTO actions (id, tenant_id, user_id, task_id, session_id, type, tool, params, idempotency_key,
      status, result, error, attempts, note, created_at, updated_at, completed_at)
    SELECT 'act_f' || g, 't' || (g % 50), 'u', 'task_f' || g, NULL, 'tool', NULL, 'null', 'k' || g,
      'SUCCESS', NULL, NULL, 1, NULL, $1, $1, $1
    FROM generate_series(1, $2) g`,
  `INSERT INTO checkpoints (id, tenant_id, user_id, run_id, session_id, task_id, step, parent_id, label,
      manifest, metadata, created_at)
    SELECT 'ckpt_f' || g, 't' || (g % 50), 'u', 'run' || (g % 1000), NULL, 'task_f' || g, g, NULL, '', '{}',
      '{}', $1
    FROM generate_series(1, $2) g`,
  `INSERT INTO checkpoint_blobs (tenant_id, user_id, run_id, hash, base, data)
    SELECT 't' || (g % 50), 'u', 'run' || (g % 1000), 'h' || g, NULL, $1::text
    FROM generate_series(1, $2) g`,
  `INSERT INTO memory (tenant_id, user_id, namespace, key, value, created_at, updated_at, expires_at)
    SELECT 't' || (g % 50), 'u', 'ns', 'k' || g, '1', $1, $1, $1 FROM generate_series(1, $2) g`,
  `INSERT INTO leases (tenant_id, user_id, name, owner, expires_at)
    SELECT 't' || (g % 50), 'u', 'l' || g, 'o', $1 FROM generate_series(1, $2) g`,
  `INSERT INTO request_keys (tenant_id, user_id, key, request_hash, state, response, ttl_seconds, expires_at)
    SELECT 't' || (g % 50), 'u', 'r' || g, 'h', 'done', NULL, 60, $1 FROM generate_series(1, $2) g`,
];

it('no statement of a sweep reads a whole table', async () => {
  const inner = postgresDriver({ pool, schema, searchPathSet: false });
  await migrate(inner);
  const seen = new Map<string, readonly SqlParam[]>();
  const clock = new ManualClock();
  const store = new SqlCoreStore('postgres', recording(inner, seen), { clock });
  const scope = { tenant_id: 'tenant', user_id: 'user' };
  const session = await store.createSession(scope, { ttl_seconds: 60 });
  await store.appendMessages(scope, session.id, [{ role: 'user', content: 'hi' }]);
  await store.appendRunEvents(scope, {
    session_id: session.id,
    run_id: 'r1',
    events: [{ type: 'run.started' }],
  });
  await store.listRunEvents(scope, session.id, 'r1', { after: '1' });
  const task = await store.createTask(scope, { type: 't', session_id: session.id });
  const { action } = await store.beginAction(scope, {
    task_id: task.id,
    type: 'tool',
    params: null,
    idempotency_key: 'k',
  });
  await store.completeAction(scope, action.id, { status: 'SUCCESS', result: 1 });
  const other = await store.createTask(scope, { type: 't' });
  const { action: done } = await store.beginAction(scope, {
    task_id: other.id,
    type: 'tool',
    params: null,
    idempotency_key: 'k2',
  });
  await store.completeAction(scope, done.id, { status: 'FAILED', error: { code: 'x', message: 'no' } });
  await store.putCheckpoint(scope, { run_id: 'r1', task_id: task.id, step: 0, channels: { a: 1 } });
  for (let step = 0; step < 2; step++)
    await store.putCheckpoint(scope, { run_id: 'r2', step, channels: { step } });
  await store.putMemory(scope, { namespace: 'ns', key: 'k', value: 1, ttl_seconds: 10 });
  await store.acquireLease(scope, 'lease', 'me', 1000);
  await store.claimRequestKey(scope, 'req', 'hash', 60);
  clock.advance(3_600_000);
  seen.clear();
  expect(await store.sweepExpired(100)).toBe(1);
  const now = new Date(clock.now()).toISOString();
  await store.sweepRetention({ checkpoints_before: now }, 1);
  const swept = await store.sweepRetention({ actions_before: now, tasks_before: now }, 100);
  expect([swept.tasks, swept.actions]).toEqual([2, 2]);
  await store.close();

  const client = new pg.Client({ connectionString: POSTGRES_URL });
  await client.connect();
  const scans: string[] = [];
  try {
    await client.query(`SET search_path TO "${schema}"`);
    for (const fill of FILL) await client.query(fill, [LIVE, ROWS]);
    await client.query('ANALYZE');
    for (const [sql, params] of seen) {
      let n = 0;
      const text = sql.replace(/\?/g, () => `$${++n}`);
      const plan = await client.query(`EXPLAIN ${text}`, [...params]);
      for (const row of plan.rows as { 'QUERY PLAN': string }[]) {
        const line = row['QUERY PLAN'];
        if (/Seq Scan/.test(line)) scans.push(`${line.trim()}  <-  ${sql.replace(/\s+/g, ' ')}`);
      }
    }
  } finally {
    await client.end();
  }
  const sent = [...seen.keys()].map((sql) => sql.replace(/\s+/g, ' '));
  for (const sweep of [
    'DELETE FROM messages WHERE (tenant_id, session_id) IN',
    'DELETE FROM sessions WHERE ord = ANY(',
    'DELETE FROM memory WHERE ctid IN',
    'DELETE FROM leases WHERE ctid IN',
    'DELETE FROM request_keys WHERE ctid IN',
    'DELETE FROM checkpoints WHERE ord IN',
    'DELETE FROM actions WHERE ord IN',
    'DELETE FROM task_events WHERE (tenant_id, task_id) IN',
    'DELETE FROM actions WHERE (tenant_id, task_id) IN',
    'DELETE FROM checkpoints WHERE (tenant_id, task_id) IN',
    'DELETE FROM tasks WHERE ord = ANY(',
    'DELETE FROM run_events WHERE ctid IN',
  ]) {
    expect(
      sent.some((sql) => sql.startsWith(sweep)),
      sweep,
    ).toBe(true);
  }
  expect(scans).toEqual([]);
});
