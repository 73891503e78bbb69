/**
 * The SQLite sweep of a large backlog: short transactions with the event loop let go between them (every
 * statement runs on this process's event loop), and the file back to its size afterwards.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';

const dir = mkdtempSync(join(tmpdir(), 'agentstate-sqlite-sweep-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const PAST = '2020-01-01T00:00:00.000Z';

function fill(file: string, count: number): void {
  const db = new Database(file);
  const session = db.prepare(
    `INSERT INTO sessions (id, tenant_id, user_id, agent, status, context, version, ttl_seconds, created_at,
      updated_at, last_activity_at, expires_at, ended_at, message_count)
      VALUES (?, 't', 'u', NULL, 'active', '{}', 1, 60, ?, ?, ?, ?, NULL, 2)`,
  );
  const message = db.prepare(
    `INSERT INTO messages (tenant_id, session_id, seq, id, user_id, role, content, metadata, created_at)
      VALUES ('t', ?, ?, ?, 'u', 'user', ?, '{}', ?)`,
  );
  db.transaction(() => {
    for (let i = 0; i < count; i++) {
      session.run(`sess_old${i}`, PAST, PAST, PAST, PAST);
      for (const seq of [1, 2])
        message.run(`sess_old${i}`, seq, `msg_old${i}_${seq}`, 'old '.repeat(40), PAST);
    }
  })();
  db.close();
}

function pragmas(file: string) {
  const db = new Database(file, { readonly: true });
  const read = (name: string) => Number(db.pragma(name, { simple: true }));
  const figures = { pages: read('page_count'), free: read('freelist_count') };
  db.close();
  return figures;
}

it('sweeps a backlog in many short transactions, lets the event loop turn, and gives the pages back', async () => {
  const file = join(dir, 'sweep.db');
  const store = await openSqliteStore(file, { clock: new ManualClock() });
  const scope = { tenant_id: 'live', user_id: 'u' };
  const live = await store.createSession(scope, { ttl_seconds: 3600 });
  const baseline = pragmas(file).pages;
  fill(file, 6000);
  expect(pragmas(file).pages).toBeGreaterThan(baseline + 200);

  let turns = 0;
  let turning = true;
  const turn = () => {
    turns++;
    if (turning) setImmediate(turn);
  };
  setImmediate(turn);
  // a request arriving during the sweep is served during it, not after it
  const appended = new Promise<number>((resolve) => {
    setImmediate(async () => {
      await store.appendMessages(scope, live.id, [{ role: 'user', content: 'during the sweep' }]);
      resolve(turns);
    });
  });
  const removed = await store.sweepExpired(100_000);
  const turnsAtEnd = turns;
  turning = false;
  expect(removed).toBe(6000);
  // at most 500 sessions a transaction, so at least 12 of them, each followed by a turn of the event loop
  expect(turnsAtEnd).toBeGreaterThanOrEqual(12);
  expect(await appended).toBeLessThan(turnsAtEnd);

  const after = pragmas(file);
  expect(after.free).toBe(0);
  expect(after.pages).toBeLessThanOrEqual(baseline + 2);
  expect((await store.listMessages(scope, live.id)).map((m) => m.content)).toEqual(['during the sweep']);
  await store.close();
});
