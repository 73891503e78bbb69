/**
 * Measures a sweep of many expired sessions (default 100 000, two messages each) on SQLite or PostgreSQL
 * while another session keeps appending messages: how long the sweep takes, the append latency
 * (p50 / p99) before and during it, and the storage (the expiry harness's probe) with the rows in and
 * after the sweep gave what it could back. The expired rows are written straight through the driver
 * (creating them through the API would take most of the time); the sweep and the appends go through the
 * store. The sweep is `sweepOnce` in calls of 500 (`SWEEP_BATCH` to change it), as the sweeper runs it.
 *   node --import tsx src/harness/ttl/bulk-sweep.ts --store URL [--sessions N] [--report PATH]
 */
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import pg from 'pg';
import { newId } from '../../core/ids.js';
import { sweepOnce } from '../../lifecycle/sweeper.js';
import { openStore } from '../../store/open.js';
import { parsePostgresUrl } from '../../store/postgres/index.js';
import { openProbe } from './probe.js';

const { values } = parseArgs({
  options: {
    store: { type: 'string' },
    sessions: { type: 'string', default: '100000' },
    report: { type: 'string' },
  },
});
const url = values.store ?? '';
const total = Number(values.sessions);
const tenant = `bulk_${randomUUID().replaceAll('-', '')}`;
const past = '2020-01-01T00:00:00.000Z';

function sessionRow(id: string): (string | number | null)[] {
  return [id, tenant, 'u', null, 'active', '{}', 1, 60, past, past, past, past, null, 2];
}
const SESSION_SQL =
  'INSERT INTO sessions (id, tenant_id, user_id, agent, status, context, version, ttl_seconds, created_at, updated_at, last_activity_at, expires_at, ended_at, message_count)';

async function fillSqlite(path: string): Promise<void> {
  const db = new Database(path);
  const session = db.prepare(`${SESSION_SQL} VALUES (${'?, '.repeat(13)}?)`);
  const message = db.prepare(
    `INSERT INTO messages (tenant_id, session_id, seq, id, user_id, role, content, metadata, created_at) VALUES (?, ?, ?, ?, 'u', 'user', ?, '{}', ?)`,
  );
  const batch = db.transaction((from: number, to: number) => {
    for (let i = from; i < to; i++) {
      const id = newId('session');
      session.run(...sessionRow(id));
      for (const seq of [1, 2])
        message.run(tenant, id, seq, newId('message'), `old message ${seq} `.repeat(8), past);
    }
  });
  for (let i = 0; i < total; i += 5000) batch(i, Math.min(total, i + 5000));
  db.close();
}

async function fillPostgres(): Promise<void> {
  const { connectionString, schema } = parsePostgresUrl(url);
  const client = new pg.Client({ connectionString });
  await client.connect();
  await client.query(`SET search_path = "${schema ?? 'agentstate'}"`);
  await client.query(
    `${SESSION_SQL} SELECT 'sess_bulk' || g, $1, 'u', NULL, 'active', '{}', 1, 60, $2, $2, $2, $2, NULL, 2
      FROM generate_series(1, $3) g`,
    [tenant, past, total],
  );
  await client.query(
    `INSERT INTO messages (tenant_id, session_id, seq, id, user_id, role, content, metadata, created_at)
      SELECT $1, 'sess_bulk' || g, s, 'msg_bulk' || g || '_' || s, 'u', 'user', repeat('old message ' || s || ' ', 8), '{}', $2
      FROM generate_series(1, $3) g, generate_series(1, 2) s`,
    [tenant, past, total],
  );
  await client.query('ANALYZE sessions; ANALYZE messages');
  await client.end();
}

const percentile = (xs: number[], p: number) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted.length === 0
    ? 0
    : (sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0);
};

const store = await openStore(url);
const probe = openProbe(url, store);
if (url.startsWith('sqlite:')) await fillSqlite(url.slice('sqlite:'.length));
else await fillPostgres();
const bytesFull = await probe.bytes();
const scope = { tenant_id: tenant, user_id: 'writer' };
const live = await store.createSession(scope, { ttl_seconds: 3600 });
const state: { phase: 'before' | 'during' | 'stop' } = { phase: 'before' };
const latencies: Record<'before' | 'during', number[]> = { before: [], during: [] };
const writer = (async () => {
  // Latency counts from when the append was due (5 ms after the previous one), so time the event loop
  // was blocked (SQLite runs statements synchronously) counts too.
  let due = performance.now();
  while (state.phase !== 'stop') {
    const at = state.phase;
    await store.appendMessages(scope, live.id, [{ role: 'user', content: 'a message while sweeping' }]);
    latencies[at].push(performance.now() - due);
    due = performance.now() + 5;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
})();
await new Promise((resolve) => setTimeout(resolve, 5000));
state.phase = 'during';
const started = performance.now();
const batch = Number(process.env.SWEEP_BATCH ?? 500);
const swept = await sweepOnce(store, batch, total + 1000);
const sweepMs = performance.now() - started;
state.phase = 'stop';
await writer;
const bytesAfter = await probe.bytes();
await probe.close();
await store.close();
const figures = (xs: number[]) => ({ n: xs.length, p50_ms: percentile(xs, 50), p99_ms: percentile(xs, 99) });
const report = {
  store: url,
  expired_sessions: total,
  messages_per_session: 2,
  swept,
  batch,
  sweep_ms: Math.round(sweepMs),
  sessions_per_s: Math.round(swept / (sweepMs / 1000)),
  append_before: figures(latencies.before),
  append_during: figures(latencies.during),
  bytes_full: bytesFull,
  bytes_after: bytesAfter,
  measured: new Date().toISOString(),
};
process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
if (values.report !== undefined) writeFileSync(values.report, `${JSON.stringify(report, null, 2)}\n`);
