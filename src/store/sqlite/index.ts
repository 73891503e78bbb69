/**
 * The SQLite store (`sqlite:PATH`, the default): one file, WAL, shared safely by several processes.
 *
 * Options beyond StoreOptions:
 * - `sqliteSynchronous`: the `synchronous` pragma. Default 'NORMAL': in WAL mode a commit survives a crash
 *   of the process, and a power loss may lose the last commits but never corrupts the file. 'FULL' also
 *   keeps those; 'OFF' is for throwaway data.
 * - `sqliteBusyTimeoutMs`: how long a writer waits for another process's transaction. Default 5000.
 * - `sqliteCheckpointMs`: WAL checkpoints run in a worker thread, so no request waits for one: after every
 *   128 commits and at least this often (ms); 0 leaves them to the connection that commits, as SQLite does
 *   by default. Default 1000.
 * - `checkpointCacheChars`: how much checkpoint data (characters of blob text) the store keeps in memory of
 *   what it wrote and read, so a read fetches only the blobs it does not hold. Default 8 Mi; 0: none kept.
 */
import { storeUnavailable } from '../../core/errors.js';
import { Checks } from '../core/checks.js';
import { SqlCoreStore } from '../sql/core-store.js';
import { migrate } from '../sql/migrate.js';
import type { StateStore, StoreOptions } from '../types.js';
import { openSqliteDriver, type SqliteSynchronous } from './driver.js';

export type { SqliteSynchronous } from './driver.js';

export interface SqliteStoreOptions extends StoreOptions {
  /** SQLite `synchronous` pragma. Default 'NORMAL' (safe in WAL mode). */
  readonly sqliteSynchronous?: SqliteSynchronous;
  /** Milliseconds a statement waits for a lock held by another process. Default 5000. */
  readonly sqliteBusyTimeoutMs?: number;
  /** WAL checkpoints in a worker thread every 128 commits and this many ms; 0: by the committing connection. Default 1000. */
  readonly sqliteCheckpointMs?: number;
  /** Checkpoint blob text kept in memory, in characters. Default 8 Mi (BLOB_CACHE_CHARS); 0: none. */
  readonly checkpointCacheChars?: number;
}

export const DEFAULT_SQLITE_CHECKPOINT_MS = 1000;
const MAX_TIMER_MS = 2 ** 31 - 1;

const SYNCHRONOUS: readonly SqliteSynchronous[] = ['OFF', 'NORMAL', 'FULL', 'EXTRA'];

/** Opens (creating the file and its directory when absent) and migrates a SQLite store. */
export async function openSqliteStore(path: string, options: SqliteStoreOptions = {}): Promise<StateStore> {
  const checks = new Checks('sqlite');
  if (typeof path !== 'string' || path.length === 0) checks.fail('path must be a non-empty file path');
  checks.record(options, 'options');
  const synchronous = options.sqliteSynchronous ?? 'NORMAL';
  if (!SYNCHRONOUS.includes(synchronous)) {
    checks.fail(`sqliteSynchronous must be one of ${SYNCHRONOUS.join(', ')}`);
  }
  const busyTimeoutMs = checks.intOption(options.sqliteBusyTimeoutMs, 'sqliteBusyTimeoutMs', 5000, 0);
  const backgroundCheckpointMs = checks.intOption(
    options.sqliteCheckpointMs,
    'sqliteCheckpointMs',
    DEFAULT_SQLITE_CHECKPOINT_MS,
    0,
  );
  // Node's timers take at most 2^31 - 1 ms; a longer one would fire every millisecond instead.
  if (backgroundCheckpointMs > MAX_TIMER_MS)
    checks.fail(`sqliteCheckpointMs must be at most ${MAX_TIMER_MS}`);
  if (options.defaultSessionTtlSeconds !== undefined) {
    checks.positiveInt(options.defaultSessionTtlSeconds, 'defaultSessionTtlSeconds');
  }
  checks.intOption(options.checkpointCacheChars, 'checkpointCacheChars', undefined, 0);
  let driver: ReturnType<typeof openSqliteDriver>;
  try {
    driver = openSqliteDriver(path, { synchronous, busyTimeoutMs, backgroundCheckpointMs });
  } catch (error) {
    throw storeUnavailable('sqlite', error);
  }
  try {
    await migrate(driver);
  } catch (error) {
    await driver.close();
    throw storeUnavailable('sqlite', error);
  }
  return new SqlCoreStore('sqlite', driver, options);
}
