/** What only the SQLite store does: its file, pragmas, migrations, and driver failures. */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { isAgentStateError } from '../../src/core/errors.js';
import { migrate } from '../../src/store/sql/migrate.js';
import { MIGRATIONS } from '../../src/store/sql/schema.js';
import { openSqliteDriver } from '../../src/store/sqlite/driver.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { checkpointStorageTests } from './checkpoint-storage.js';
import { child, runTogether } from './child/run.js';

const dir = mkdtempSync(join(tmpdir(), 'agentstate-sqlite-specific-'));
let n = 0;
const fresh = () => join(dir, `db${++n}`, 'sub', 'state.db');
const scope = { tenant_id: 'tenant', user_id: 'user' };

afterAll(() => rmSync(dir, { recursive: true, force: true }));

function migrationRows(file: string) {
  const db = new Database(file, { readonly: true });
  try {
    return db.prepare('SELECT version, name, applied_at FROM agentstate_migrations ORDER BY version').all();
  } finally {
    db.close();
  }
}

describe('sqlite store', () => {
  it('a folder it cannot create, or a folder given as the file, fails at once with a sentence naming it', async () => {
    const blocker = join(dir, 'a-file');
    writeFileSync(blocker, 'not a folder');
    await expect(openSqliteStore(join(blocker, 'sub', 'state.db'))).rejects.toThrow(
      `${blocker} is a file, not a folder`,
    );
    expect(existsSync(join(blocker, 'sub'))).toBe(false);
    await expect(openSqliteStore(dir)).rejects.toThrow(`${dir} is a folder; name a database file in it`);
    // mkdir(2) answers ENOENT under /proc, where Node's recursive mkdir would retry forever.
    if (process.platform === 'linux') {
      await expect(openSqliteStore('/proc/agentstate-nope/state.db')).rejects.toThrow(
        'cannot create /proc/agentstate-nope for the database (ENOENT)',
      );
    }
  });

  it('creates the directories of its path, uses WAL, and records every migration once', async () => {
    const file = fresh();
    const store = await openSqliteStore(file);
    await store.createSession(scope, {});
    await store.close();
    expect(existsSync(file)).toBe(true);
    const rows = migrationRows(file);
    expect(rows.map((row) => (row as { version: number }).version)).toEqual(MIGRATIONS.map((m) => m.version));
    const db = new Database(file, { readonly: true });
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    db.close();

    const again = await openSqliteStore(file);
    expect((await again.listSessions(scope)).items).toHaveLength(1);
    await again.close();
    expect(migrationRows(file)).toEqual(rows);
  });

  it('re-running the migrations applies nothing', async () => {
    const file = fresh();
    const driver = openSqliteDriver(file, { synchronous: 'NORMAL', busyTimeoutMs: 1000 });
    const first = await migrate(driver);
    const second = await migrate(driver);
    await driver.close();
    expect(first.applied).toEqual(MIGRATIONS.map((m) => m.version));
    expect(second).toEqual({ applied: [], version: first.version });
  });

  it('refuses a database migrated by a newer agentstate', async () => {
    const file = fresh();
    await (await openSqliteStore(file)).close();
    const db = new Database(file);
    db.prepare('INSERT INTO agentstate_migrations (version, name, applied_at) VALUES (999, ?, ?)').run(
      'future',
      'x',
    );
    db.close();
    const failure = await openSqliteStore(file).catch((e) => e);
    expect(isAgentStateError(failure, 'store_unavailable')).toBe(true);
    expect((failure as Error).message).toMatch(/schema is at version 999, newer than this agentstate knows/);
  });

  it('applies the synchronous option and turns foreign keys on', async () => {
    for (const [synchronous, expected] of [
      ['OFF', 0],
      ['NORMAL', 1],
      ['FULL', 2],
      ['EXTRA', 3],
    ] as const) {
      const driver = openSqliteDriver(fresh(), { synchronous, busyTimeoutMs: 1234 });
      expect(await driver.query.get('PRAGMA synchronous')).toEqual({ synchronous: expected });
      expect(await driver.query.get('PRAGMA foreign_keys')).toEqual({ foreign_keys: 1 });
      expect(await driver.query.get('PRAGMA busy_timeout')).toEqual({ timeout: 1234 });
      await driver.close();
    }
    await expect(openSqliteStore(fresh(), { sqliteSynchronous: 'SOMETIMES' as 'OFF' })).rejects.toThrow(
      /\[sqlite\] sqliteSynchronous must be one of/,
    );
  });

  it('three processes opening a new file at once migrate it once', async () => {
    const file = fresh();
    const results = await runTogether(
      [1, 2, 3].map((i) => child('open.ts', [`sqlite:${file}`, 'tenant', `user${i}`])),
    );
    expect(results).toHaveLength(3);
    expect(migrationRows(file)).toHaveLength(MIGRATIONS.length);
    const store = await openSqliteStore(file);
    expect((await store.listSessions({ tenant_id: 'tenant' })).items).toHaveLength(3);
    await store.close();
  }, 30_000);

  it('a database locked past the busy timeout is store_unavailable, and the next call works', async () => {
    const file = fresh();
    const store = await openSqliteStore(file, { sqliteBusyTimeoutMs: 50 });
    const session = await store.createSession(scope, {});
    const other = new Database(file);
    other.exec('BEGIN EXCLUSIVE');
    const failure = await store
      .appendMessages(scope, session.id, [{ role: 'user', content: 'hi' }])
      .catch((e) => e);
    expect(isAgentStateError(failure, 'store_unavailable')).toBe(true);
    expect((failure as Error).message).toMatch(/^\[sqlite\] store unavailable: database is locked/);
    expect(((failure as Error).cause as { code?: string }).code).toBe('SQLITE_BUSY');
    other.exec('ROLLBACK');
    other.close();
    const appended = await store.appendMessages(scope, session.id, [{ role: 'user', content: 'again' }]);
    expect(appended.map((m) => m.seq)).toEqual([1]);
    await store.close();
  });

  it("a writer waits for another connection's write lock with the event loop free, then commits", async () => {
    const file = fresh();
    const store = await openSqliteStore(file, { sqliteBusyTimeoutMs: 5000 });
    const session = await store.createSession(scope, {});
    const other = new Database(file);
    other.exec('BEGIN IMMEDIATE');
    // Only a free event loop runs these timers: SQLite's own busy handler would sleep in this thread, and
    // the other connection (in this same thread) could then never let go of the lock.
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 5);
    const release = setTimeout(() => other.exec('COMMIT'), 80);
    const started = performance.now();
    try {
      const appended = await store.appendMessages(scope, session.id, [{ role: 'user', content: 'waited' }]);
      expect(appended.map((m) => m.seq)).toEqual([1]);
      expect(performance.now() - started).toBeGreaterThanOrEqual(70);
      // The other connection's COMMIT ran on this thread's event loop before the write got the lock, and the
      // ticker ran meanwhile (how often depends on how busy the machine is).
      expect(other.inTransaction).toBe(false);
      expect(ticks).toBeGreaterThanOrEqual(1);
      // The wait changed nothing but the one append, and the next write takes the lock at once.
      const next = await store.appendMessages(scope, session.id, [{ role: 'assistant', content: 'ok' }]);
      expect(next.map((m) => m.seq)).toEqual([2]);
      expect((await store.listMessages(scope, session.id)).map((m) => m.content)).toEqual(['waited', 'ok']);
    } finally {
      clearInterval(ticker);
      clearTimeout(release);
      if (other.inTransaction) other.exec('ROLLBACK');
      other.close();
      await store.close();
    }
  });

  it('a write outside a transaction waits for the lock the same way', async () => {
    const file = fresh();
    // A busy timeout far beyond the wait: a write that only tried again at its end would take 20 s.
    const driver = openSqliteDriver(file, { synchronous: 'NORMAL', busyTimeoutMs: 20_000 });
    await driver.query.run('CREATE TABLE t (x INTEGER)');
    const other = new Database(file);
    other.exec('BEGIN IMMEDIATE');
    // Only a free event loop runs the timer that lets go of the lock (well before the busy timeout), and the
    // ticker's timers meanwhile (at least one, however busy this machine is).
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 5);
    const release = setTimeout(() => other.exec('COMMIT'), 150);
    const started = performance.now();
    try {
      expect(await driver.query.run('INSERT INTO t (x) VALUES (?)', [1])).toBe(1);
      // The other connection's COMMIT ran (on this thread's event loop) before the write got the lock.
      expect(other.inTransaction).toBe(false);
      expect(ticks).toBeGreaterThanOrEqual(1);
      // Soon after the release (about 160 ms here), not at the busy timeout: 10 s holds on a loaded machine.
      expect(performance.now() - started).toBeLessThan(10_000);
      expect(await driver.query.get('SELECT count(*) AS n FROM t')).toEqual({ n: 1 });
      // The blocking timeout is back for every other statement.
      expect(await driver.query.get('PRAGMA busy_timeout')).toEqual({ timeout: 20_000 });
    } finally {
      clearInterval(ticker);
      clearTimeout(release);
      if (other.inTransaction) other.exec('ROLLBACK');
      other.close();
      await driver.close();
    }
  });

  it('a path that cannot be a database is store_unavailable', async () => {
    const failure = await openSqliteStore(dir).catch((e) => e);
    expect(isAgentStateError(failure, 'store_unavailable')).toBe(true);
  });
});

describe('sqlite checkpoint storage', () => {
  const file = fresh();
  checkpointStorageTests(
    () => openSqliteStore(file),
    async (tenant_id, run_id) => {
      const db = new Database(file, { readonly: true });
      try {
        const row = db
          .prepare(
            'SELECT count(*) AS rows, coalesce(sum(length(data)), 0) AS bytes FROM checkpoint_blobs WHERE tenant_id = ? AND run_id = ?',
          )
          .get(tenant_id, run_id) as { rows: number; bytes: number };
        return row;
      } finally {
        db.close();
      }
    },
  );
});
