/**
 * Every statement the SQL store sends, run under EXPLAIN QUERY PLAN on SQLite: none scans a whole table
 * or a whole index, so every read and list finds its rows through an index that leads with its scope (or
 * its id), and every sweep finds what it deletes through an index too; and none is planned again at each run.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.js';
import { OPEN_TASK_STATES } from '../../src/core/model.js';
import { SqlCoreStore } from '../../src/store/sql/core-store.js';
import type { SqlDriver, SqlExecutor, SqlParam } from '../../src/store/sql/executor.js';
import { migrate } from '../../src/store/sql/migrate.js';
import { openSqliteDriver } from '../../src/store/sqlite/driver.js';

const dir = mkdtempSync(join(tmpdir(), 'agentstate-plans-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

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

it('no statement of any store call scans a whole table', async () => {
  const file = join(dir, 'plans.db');
  const inner = openSqliteDriver(file, { synchronous: 'NORMAL', busyTimeoutMs: 1000 });
  await migrate(inner);
  const seen = new Map<string, readonly SqlParam[]>();
  const clock = new ManualClock();
  const store = new SqlCoreStore('sqlite', recording(inner, seen), { clock });
  const scope = { tenant_id: 'tenant', user_id: 'user' };
  const tenant = { tenant_id: 'tenant' };

  const session = await store.createSession(scope, { ttl_seconds: 60 });
  await store.getSession(tenant, session.id);
  await store.listSessions(scope, { status: 'active', limit: 1 });
  await store.listSessions(tenant);
  await store.updateSession(scope, session.id, 1, { context: { a: 1 } });
  await store.touchSession(scope, session.id);
  await store.appendMessages(scope, session.id, [{ role: 'user', content: 'hi' }]);
  await store.listMessages(tenant, session.id, { after_seq: 0 });
  await store.lastMessages(scope, session.id, 5);
  const task = await store.createTask(scope, { type: 't', session_id: session.id });
  await store.listTasks(scope, { session_id: session.id, state: ['INIT'], type: 't' });
  await store.listTasks(tenant, { limit: 1 });
  await store.updateTask(scope, task.id, 1, { state: 'COLLECTING' });
  await store.listTaskEvents(tenant, task.id);
  const { action } = await store.beginAction(scope, {
    task_id: task.id,
    type: 'tool',
    params: null,
    idempotency_key: 'k',
  });
  await store.getActionByKey(scope, 'k');
  await store.recordAttempt(scope, action.id);
  await store.completeAction(scope, action.id, { status: 'SUCCESS', result: 1 });
  await store.listActions(tenant, { task_id: task.id, status: 'SUCCESS' });
  await store.listActions(scope, { limit: 1 });
  const run_id = 'run';
  for (let step = 0; step < 3; step++)
    await store.putCheckpoint(scope, { run_id, step, channels: { list: [step] } });
  const history = await store.listCheckpoints(tenant, run_id, { limit: 1 });
  await store.listCheckpoints(scope, run_id, { before: history.next_cursor });
  await store.latestCheckpoint(scope, run_id);
  await store.pruneCheckpoints(scope, run_id, 1);
  await store.putCheckpoint(scope, { run_id: 'task-run', task_id: task.id, step: 0, channels: { a: 1 } });
  await store.putMemory(scope, { namespace: 'ns', key: 'k1', value: 1, ttl_seconds: 10 });
  await store.listMemory(scope, 'ns', { prefix: 'k', limit: 1 });
  await store.getMemory(scope, 'ns', 'k1');
  await store.deleteMemory(scope, 'ns', 'k1');
  await store.acquireLease(scope, 'lease', 'me', 1000);
  await store.releaseLease(scope, 'lease', 'me');
  await store.claimRequestKey(scope, 'req', 'hash', 60);
  await store.completeRequestKey(scope, 'req', { status: 200, body: {} });
  await store.releaseRequestKey(scope, 'req');
  await store.commitTurn(scope, {
    messages: { session_id: session.id, items: [{ role: 'assistant', content: 'ok' }] },
  });
  await store.endSession(scope, session.id);
  clock.advance(3_600_000);
  expect(await store.sweepExpired(10)).toBe(1);
  await store.deleteSession(scope, session.id);
  const now = new Date(clock.now()).toISOString();
  const cutoffs = { tasks_before: now, actions_before: now, checkpoints_before: now };
  expect(await store.sweepRetention({ actions_before: now }, 10)).toEqual({
    tasks: 0,
    actions: 1,
    checkpoints: 0,
  });
  expect(await store.sweepRetention({ tasks_before: now }, 10)).toEqual({
    tasks: 1,
    actions: 0,
    checkpoints: 1,
  });
  expect((await store.sweepRetention(cutoffs, 10)).checkpoints).toBe(1);
  await store.close();

  const db = new Database(file, { readonly: true });
  const scans: string[] = [];
  for (const [sql, params] of seen) {
    if (/^\s*(SELECT 1 AS one$|PRAGMA)/.test(sql)) continue;
    const plan = db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as { detail: string }[];
    for (const { detail } of plan) {
      // `chain` (alias `c`) is the recursive CTE over checkpoint blobs, json_each the list of a batch's
      // ords: neither is a table. `SCAN t USING [COVERING] INDEX i` reads all of an index: a scan too.
      const scanned = /^SCAN (\w+)(?: USING .*)?$/.exec(detail)?.[1];
      if (scanned !== undefined && !['chain', 'c', 'json_each'].includes(scanned)) {
        scans.push(`${detail}  <-  ${sql.replace(/\s+/g, ' ')}`);
      }
    }
  }
  db.close();
  const sweeps = [
    'DELETE FROM messages WHERE (tenant_id, session_id) IN',
    'DELETE FROM sessions WHERE ord IN',
    'DELETE FROM memory WHERE rowid IN',
    'DELETE FROM leases WHERE rowid IN',
    'DELETE FROM request_keys WHERE rowid IN',
    'DELETE FROM checkpoints WHERE ord IN',
    'DELETE FROM actions WHERE ord IN',
    'DELETE FROM task_events WHERE (tenant_id, task_id) IN',
    'DELETE FROM actions WHERE (tenant_id, task_id) IN',
    'DELETE FROM checkpoints WHERE (tenant_id, task_id) IN',
    'DELETE FROM tasks WHERE ord IN',
  ];
  const sent = [...seen.keys()].map((sql) => sql.replace(/\s+/g, ' '));
  for (const sweep of sweeps)
    expect(
      sent.some((sql) => sql.startsWith(sweep)),
      sweep,
    ).toBe(true);
  expect(seen.size).toBeGreaterThan(40);
  expect(scans).toEqual([]);
  // SQLite's planner reads the value bound to a plain `LIMIT ?`, and then prepares the statement again each
  // time it is bound anew: every LIMIT goes through a CAST, which it plans once.
  expect(sent.filter((sql) => /\bLIMIT \?/.test(sql))).toEqual([]);
  expect(sent.filter((sql) => sql.includes('LIMIT CAST(? AS INTEGER)')).length).toBeGreaterThan(8);
});

it("a session's open tasks and the head's are read through the open-task indexes, past finished tasks", async () => {
  const file = join(dir, 'open-tasks.db');
  const inner = openSqliteDriver(file, { synchronous: 'NORMAL', busyTimeoutMs: 1000 });
  await migrate(inner);
  const seen = new Map<string, readonly SqlParam[]>();
  const store = new SqlCoreStore('sqlite', recording(inner, seen), { clock: new ManualClock() });
  const scope = { tenant_id: 'tenant', user_id: 'user' };
  const session = await store.createSession(scope, {});
  await store.createTask(scope, { type: 't', session_id: session.id, state: 'DONE' });
  await store.createTask(scope, { type: 't', session_id: session.id, state: 'COLLECTING' });
  seen.clear();
  const listed = await store.listTasks(scope, {
    session_id: session.id,
    state: [...OPEN_TASK_STATES].reverse(),
  });
  expect(listed.items.map((task) => task.state)).toEqual(['COLLECTING']);
  const head = await store.getSessionHead(scope, session.id, { open_tasks: 5 });
  expect(head?.open_tasks?.map((task) => task.state)).toEqual(['COLLECTING']);
  await store.close();
  const db = new Database(file, { readonly: true });
  const plans = [...seen]
    .filter(([sql]) => sql.includes('FROM tasks'))
    .map(([sql, params]) =>
      (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as { detail: string }[])
        .map((row) => row.detail)
        .join('; '),
    );
  db.close();
  expect(plans).toHaveLength(2);
  for (const plan of plans) expect(plan).toMatch(/USING INDEX tasks_open_by_(session|user)/);
});
