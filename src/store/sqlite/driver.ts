/**
 * The SQLite executor over better-sqlite3: one connection, statements prepared once, WAL, a busy timeout,
 * and every statement and transaction of this process run one after another (a mutex), so a read never
 * sees another call's uncommitted writes. Write transactions are BEGIN IMMEDIATE: across processes the
 * second writer waits instead of failing late. It waits with the event loop free (lock-wait.ts): SQLite's
 * own busy handler would sleep in the thread, stopping every request of the process meanwhile.
 */
import { existsSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import { makeFolder } from '../../process/folders.js';
import type { SqlDialect, SqlDriver, SqlExecutor, SqlParam, SqlRow, SweepPacing } from '../sql/executor.js';
import { statementsSent } from '../sql/executor.js';
import { Mutex } from '../sql/mutex.js';
import { Pacer } from '../sql/sweep-batches.js';
import { type BackgroundCheckpoints, startBackgroundCheckpoints } from './background-checkpoint.js';
import { LockWait } from './lock-wait.js';
import { ThreadWriteLock, writeLockBuffer } from './thread-write-lock.js';

export type SqliteSynchronous = 'OFF' | 'NORMAL' | 'FULL' | 'EXTRA';

export interface SqliteDriverOptions {
  readonly synchronous: SqliteSynchronous;
  readonly busyTimeoutMs: number;
  /**
   * WAL checkpoints in a worker thread (background-checkpoint.ts) after every CHECKPOINT_EVERY_WRITES
   * commits and every this many ms, started once the connection has written a little; 0 leaves them to
   * the committing connection, as SQLite does by default.
   */
  readonly backgroundCheckpointMs?: number;
}

/** Write statements and transactions before the checkpoint worker starts: a store used briefly needs none. */
const BACKGROUND_CHECKPOINT_AFTER_WRITES = 64;
/**
 * Commits between two checkpoints the writer asks the worker for: about 1,000-2,000 WAL pages of turns,
 * well below the fallback threshold, and one restart of the WAL (one fsync on the event loop) per 20-40 turns.
 */
export const CHECKPOINT_EVERY_WRITES = 128;
/** SQLite's own automatic checkpoint threshold, in WAL pages (its default). */
const AUTOCHECKPOINT_PAGES = 1_000;
/** The committing connection's threshold while the worker checkpoints: only if it falls far behind. */
const FALLBACK_AUTOCHECKPOINT_PAGES = 4_000;

export const SQLITE_DIALECT: SqlDialect = {
  name: 'sqlite',
  serialKey: 'INTEGER PRIMARY KEY AUTOINCREMENT',
  claimRows: '',
  inIntegers: (column) => `${column} IN (SELECT value FROM json_each(?))`,
  rowId: 'rowid',
};

/**
 * Every statement runs on this process's event loop: a sweep transaction aims at 1 ms, so a request that
 * arrives meanwhile waits about that long (and the WAL checkpoint after it, about as long) at most.
 */
const SWEEP_PACING: SweepPacing = { first: 32, min: 8, max: 500, targetMs: 1 };

/**
 * Pages one `PRAGMA incremental_vacuum` step gives back: paced like a sweep transaction (64 pages, about
 * 1 ms here, to start with).
 */
const VACUUM_PACING: SweepPacing = { first: 64, min: 16, max: 2048, targetMs: 1 };
/** At most this many pages per reclaim (256 MiB at 4 KiB); the rest goes at the next one. */
const VACUUM_MAX_PAGES = 65_536;

const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

const UNIQUE_CODES = new Set(['SQLITE_CONSTRAINT_UNIQUE', 'SQLITE_CONSTRAINT_PRIMARYKEY']);

export function openSqliteDriver(path: string, options: SqliteDriverOptions): SqlDriver {
  if (path !== ':memory:' && !path.startsWith('file:')) {
    if (existsSync(path) && statSync(path).isDirectory()) {
      throw new Error(
        `${path} is a folder; name a database file in it, for example ${join(path, 'agentstate.db')}`,
      );
    }
    makeFolder(dirname(path), 'for the database');
  }
  const db = new Database(path);
  // Only a database without tables can take auto_vacuum; one made by an older agentstate keeps reusing
  // its free pages instead (see docs/lifecycle.md).
  const fresh = (db.prepare('SELECT COUNT(*) AS n FROM sqlite_master').get() as { n: number }).n === 0;
  if (fresh) db.pragma('auto_vacuum = INCREMENTAL');
  db.pragma('journal_mode = WAL');
  const lockWait = new LockWait(db, Math.floor(options.busyTimeoutMs));
  db.pragma(`synchronous = ${options.synchronous}`);
  db.pragma('foreign_keys = ON');

  const statements = new Map<string, Database.Statement>();
  /** The statement of `sql`, prepared once, for one run of it (counted in `statementsSent`). */
  const prepared = (sql: string): Database.Statement => {
    statementsSent.sqlite++;
    let statement = statements.get(sql);
    if (statement === undefined) {
      statement = db.prepare(sql);
      statements.set(sql, statement);
    }
    return statement;
  };
  const direct: SqlExecutor = {
    all: async (sql, params = []) => prepared(sql).all(...(params as SqlParam[])) as SqlRow[],
    get: async (sql, params = []) => prepared(sql).get(...(params as SqlParam[])) as SqlRow | undefined,
    run: async (sql, params = []) => prepared(sql).run(...(params as SqlParam[])).changes,
  };
  const mutex = new Mutex();
  const vacuumPacer = new Pacer(VACUUM_PACING);
  // A file of its own (not :memory: nor a URI) can have a second connection in a worker thread.
  const onDisk = path !== ':memory:' && path !== '' && !path.startsWith('file:');
  // Every write of this thread's connections to the file waits here first for the other threads' writes.
  const threadLock = onDisk ? new ThreadWriteLock(writeLockBuffer(path)) : null;
  const writing = <T>(section: () => Promise<T> | T): Promise<T> | T =>
    threadLock === null ? section() : threadLock.run(section);
  const intervalMs = options.backgroundCheckpointMs ?? 0;
  let writes = intervalMs > 0 && onDisk ? 0 : Number.NEGATIVE_INFINITY;
  let background: BackgroundCheckpoints | null = null;
  const wrote = () => {
    ++writes;
    if (background !== null && writes % CHECKPOINT_EVERY_WRITES === 0) background.request();
    if (writes !== BACKGROUND_CHECKPOINT_AFTER_WRITES || !db.open) return;
    try {
      background = startBackgroundCheckpoints(path, {
        intervalMs,
        synchronous: options.synchronous,
        onStopped: () => {
          // The worker is gone: this connection checkpoints again as SQLite does by default.
          background = null;
          void mutex.run(() => {
            if (db.open) db.pragma(`wal_autocheckpoint = ${AUTOCHECKPOINT_PAGES}`);
          });
        },
      });
    } catch {
      // No thread to be had: this connection keeps checkpointing as SQLite does by default. The write
      // that got here has committed; it must not fail for this.
      return;
    }
    db.pragma(`wal_autocheckpoint = ${FALLBACK_AUTOCHECKPOINT_PAGES}`);
  };
  const runTransaction = async <T>(begin: string, fn: (tx: SqlExecutor) => Promise<T>): Promise<T> => {
    // Prepared once like every statement (exec would parse BEGIN and COMMIT again on every call).
    const beginStatement = prepared(begin);
    if (begin === 'BEGIN DEFERRED') beginStatement.run();
    else await lockWait.acquire(() => beginStatement.run());
    try {
      const result = await fn(direct);
      prepared('COMMIT').run();
      if (begin !== 'BEGIN DEFERRED') wrote();
      return result;
    } catch (error) {
      if (db.inTransaction) prepared('ROLLBACK').run();
      throw error;
    }
  };
  const inTransaction = <T>(begin: string, fn: (tx: SqlExecutor) => Promise<T>): Promise<T> =>
    mutex.run(() =>
      begin === 'BEGIN DEFERRED' ? runTransaction(begin, fn) : writing(() => runTransaction(begin, fn)),
    );

  /** A passive checkpoint: copies what the WAL holds into the database file, never waiting for a reader. */
  const checkpoint = () =>
    mutex.run(() => {
      if (db.open) db.pragma('wal_checkpoint(PASSIVE)');
    });

  return {
    dialect: SQLITE_DIALECT,
    query: {
      all: (sql, params) => mutex.run(() => direct.all(sql, params)),
      get: (sql, params) => mutex.run(() => direct.get(sql, params)),
      run: (sql, params) =>
        mutex.run(() =>
          writing(async () => {
            const statement = prepared(sql);
            const changes = await lockWait.acquire(() => statement.run(...(params ?? [])).changes);
            wrote();
            return changes;
          }),
        ),
    },
    transaction: (fn) => inTransaction('BEGIN IMMEDIATE', fn),
    snapshot: (fn) => inTransaction('BEGIN DEFERRED', fn),
    migrationTransaction: (fn) => inTransaction('BEGIN IMMEDIATE', fn),
    sweepPacing: SWEEP_PACING,
    checkpoint,
    // The whole file at once (SQLite gives free pages back per database, not per table), in short steps
    // with the event loop free between them, each followed by a checkpoint of what it moved.
    reclaim: async (deleted) => {
      const freePages = () =>
        mutex.run(() =>
          db.open && db.pragma('auto_vacuum', { simple: true }) === 2
            ? Number(db.pragma('freelist_count', { simple: true }))
            : 0,
        );
      let left = await freePages();
      for (let given = 0; left > 0 && given < VACUUM_MAX_PAGES; ) {
        const pages = Math.min(vacuumPacer.size, left, VACUUM_MAX_PAGES - given);
        const started = performance.now();
        await mutex.run(() =>
          writing(() => {
            if (db.open) db.pragma(`incremental_vacuum(${pages})`);
          }),
        );
        vacuumPacer.observe(performance.now() - started);
        given += pages;
        await yieldToEventLoop();
        await checkpoint();
        await yieldToEventLoop();
        left = await freePages();
      }
      return [...deleted.keys()];
    },
    isUniqueViolation: (error) => error instanceof Database.SqliteError && UNIQUE_CODES.has(error.code),
    ping: () => mutex.run(() => db.open && db.prepare('SELECT 1').get() !== undefined),
    close: () =>
      mutex.run(async () => {
        writes = Number.NEGATIVE_INFINITY;
        await background?.stop();
        background = null;
        statements.clear();
        if (db.open) db.close();
      }),
  };
}
