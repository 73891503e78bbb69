/** The SQL stores (SQLite, PostgreSQL): the store core over the SQL driver. */
import { CoreStore } from '../core/create-store.js';
import { checkRetention } from '../shared/retention.js';
import type { RetentionCutoffs, StoreOptions } from '../types.js';
import type { SqlDriver } from './executor.js';
import type { DetailedSweep } from './retention.js';
import { type SqlDriverOptions, SqlStoreDriver } from './store-driver.js';

export class SqlCoreStore extends CoreStore {
  private readonly rows: SqlStoreDriver;

  constructor(
    name: 'sqlite' | 'postgres',
    sql: SqlDriver,
    options: StoreOptions & SqlDriverOptions,
    onClose?: () => Promise<void>,
  ) {
    const driver = new SqlStoreDriver(name, sql, onClose, {
      fastPaths: options.fastPaths !== false,
      ...(options.sessions === undefined ? {} : { sessions: options.sessions }),
      ...(options.checkpointCacheChars === undefined
        ? {}
        : { checkpointCacheChars: options.checkpointCacheChars }),
    });
    super(driver, options);
    this.rows = driver;
  }

  /**
   * Called with the error of a storage reclaim after a sweep (the store has no logger). The reclaim runs
   * after the sweep's deletes committed: its failure never fails the sweep nor loses its counts.
   */
  set onReclaimError(hook: ((error: unknown) => void) | undefined) {
    this.rows.onReclaimError = hook;
  }
  get onReclaimError(): ((error: unknown) => void) | undefined {
    return this.rows.onReclaimError;
  }

  /** Optimistic writes (PostgreSQL) that ran again in a transaction since the store opened. */
  get optimisticMisses(): number {
    return this.rows.optimisticMisses;
  }

  /** How many storage reclaims after sweeps failed since the store opened, and the last one's error. */
  get reclaimErrors(): { readonly count: number; readonly last: unknown } {
    return this.rows.reclaimErrors;
  }

  /** sweepRetention, also naming the tasks it deleted. */
  sweepRetentionDetailed(cutoffs: RetentionCutoffs, limit: number): Promise<DetailedSweep> {
    return this.rows.sweepRetentionDetailed(checkRetention(this.adapter, cutoffs, limit));
  }
}
