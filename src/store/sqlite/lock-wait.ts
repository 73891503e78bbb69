/**
 * Waiting for another process's write lock with the event loop free. SQLite's busy handler (busy_timeout)
 * sleeps in the calling thread: while one process of a cluster waits for the other's transaction, every
 * request of the waiting process stops too. Here the statement that takes the write lock (BEGIN IMMEDIATE,
 * or a write outside a transaction) is tried with no busy handler; when the lock is taken it is tried
 * again after a short timer (1 ms, doubling to 8 ms, with jitter so two waiters do not retry in step),
 * until the configured timeout has passed, and then the SQLITE_BUSY error is thrown as before. Every other
 * statement keeps the blocking busy timeout: in WAL mode they rarely meet a lock at all.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';

const FIRST_WAIT_MS = 1;
const LONGEST_WAIT_MS = 8;

export function isBusy(error: unknown): boolean {
  return error instanceof Database.SqliteError && error.code.startsWith('SQLITE_BUSY');
}

export class LockWait {
  private readonly noWait: Database.Statement;
  private readonly blocking: Database.Statement;
  /** Lock waits that ended in the lock (for tests and diagnostics). */
  waited = 0;

  constructor(
    db: Database.Database,
    private readonly timeoutMs: number,
  ) {
    db.pragma(`busy_timeout = ${timeoutMs}`);
    this.noWait = db.prepare('PRAGMA busy_timeout = 0');
    this.blocking = db.prepare(`PRAGMA busy_timeout = ${timeoutMs}`);
  }

  /**
   * Runs `attempt`, which takes the write lock; if another connection holds it, waits on a timer and runs
   * it again. `attempt` must change nothing when it fails with SQLITE_BUSY (a BEGIN, or one statement in
   * autocommit mode: SQLite undoes it whole).
   */
  async acquire<T>(attempt: () => T): Promise<T> {
    const started = performance.now();
    for (let tries = 0, wait = FIRST_WAIT_MS; ; tries++, wait = Math.min(wait * 2, LONGEST_WAIT_MS)) {
      let busy: unknown;
      this.noWait.run();
      try {
        const result = attempt();
        if (tries > 0) this.waited++;
        return result;
      } catch (error) {
        if (!isBusy(error)) throw error;
        busy = error;
      } finally {
        this.blocking.run();
      }
      const left = this.timeoutMs - (performance.now() - started);
      if (left <= 0) throw busy;
      await sleep(Math.max(1, Math.min(left, wait * (0.5 + Math.random()))));
    }
  }
}
