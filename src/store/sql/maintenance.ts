/**
 * The SQL driver's work across all tenants: the expiry sweep and retention in short transactions paced
 * by the database (sweep-batches.ts), the storage given back after them, and the gauges' counts.
 */
import { isoAt } from '../../core/clock.js';
import { storeUnavailable } from '../../core/errors.js';
import type { SessionStatus } from '../../core/model.js';
import type { DriverMaintenance } from '../core/driver.js';
import { type CheckedRetention, emptyStats, LIVE_STATUSES } from '../shared/retention.js';
import type { ActionStats, RetentionSweep } from '../types.js';
import { countActions } from './action-stats.js';
import { LIMIT_PARAM, type SqlDriver, type SqlExecutor } from './executor.js';
import { type DetailedSweep, sweepRetentionRows } from './retention.js';
import { DeletedTally, inBatches, Pacer } from './sweep-batches.js';

/** Most expired memory items, leases and request keys (each) one sweep removes, whatever its limit. */
export const MAX_SWEEP_OTHERS = 100_000;

/** The tables of what expires besides sessions: memory items (with a TTL), leases, request keys. */
const EXPIRING_TABLES = ['memory', 'leases', 'request_keys'] as const;
type Kind =
  | 'sessions'
  | (typeof EXPIRING_TABLES)[number]
  | 'run_events'
  | 'checkpoints'
  | 'actions'
  | 'tasks';

export class SqlMaintenance implements DriverMaintenance {
  private readonly pacers: Record<Kind, Pacer>;
  /** Rows the sweeps deleted, per table, since the table was last reclaimed. */
  private readonly deleted = new DeletedTally();
  /** Called with the error of a storage reclaim after a sweep (which never fails the sweep). */
  onReclaimError: ((error: unknown) => void) | undefined = undefined;
  private failedReclaims = 0;
  private lastReclaimError: unknown = undefined;

  constructor(private readonly driver: SqlDriver) {
    const pacer = () => new Pacer(driver.sweepPacing);
    this.pacers = {
      sessions: pacer(),
      memory: pacer(),
      leases: pacer(),
      request_keys: pacer(),
      run_events: pacer(),
      checkpoints: pacer(),
      actions: pacer(),
      tasks: pacer(),
    };
  }

  /** What runs between two sweep transactions: the driver's checkpoint, when it has one. */
  private get between(): (() => Promise<void>) | undefined {
    return this.driver.checkpoint?.bind(this.driver);
  }

  async sweepExpired(now_ms: number, limit: number): Promise<number> {
    const now = isoAt(now_ms);
    const d = this.driver.dialect;
    const removed = await inBatches({
      pacer: this.pacers.sessions,
      limit,
      step: (size) =>
        this.driver.transaction(async (tx) => {
          // Claim the longest expired (PostgreSQL: FOR UPDATE SKIP LOCKED, so sweepers take disjoint rows).
          const claimed = await tx.all(
            `SELECT ord FROM sessions WHERE expires_at <= ? AND (kept_until IS NULL OR kept_until <= ?)
              ORDER BY expires_at ${LIMIT_PARAM}${d.claimRows}`,
            [now, now, size],
          );
          if (claimed.length === 0) return 0;
          const ords = JSON.stringify(claimed.map((row) => Number(row.ord)));
          const messages = await tx.run(
            `DELETE FROM messages WHERE (tenant_id, session_id) IN
              (SELECT tenant_id, id FROM sessions WHERE ${d.inIntegers('ord')})`,
            [ords],
          );
          const sessions = await tx.run(`DELETE FROM sessions WHERE ${d.inIntegers('ord')}`, [ords]);
          this.deleted.add('sessions', sessions);
          this.deleted.add('messages', messages);
          return sessions;
        }),
      between: this.between,
    });
    for (const table of EXPIRING_TABLES) {
      const gone = await inBatches({
        pacer: this.pacers[table],
        limit: MAX_SWEEP_OTHERS,
        step: (size) =>
          this.driver.query.run(
            `DELETE FROM ${table} WHERE ${d.rowId} IN
              (SELECT ${d.rowId} FROM ${table} WHERE expires_at <= ? ORDER BY expires_at ${LIMIT_PARAM}${d.claimRows})`,
            [now, size],
          ),
        between: this.between,
      });
      this.deleted.add(table, gone);
    }
    // A run's events go once its newest one expired: rows that expired with no newer row of the run left.
    const events = await inBatches({
      pacer: this.pacers.run_events,
      limit: MAX_SWEEP_OTHERS,
      step: (size) =>
        this.driver.query.run(
          `DELETE FROM run_events WHERE ${d.rowId} IN
            (SELECT ${d.rowId} FROM run_events e WHERE expires_at <= ? AND NOT EXISTS
              (SELECT 1 FROM run_events n WHERE n.tenant_id = e.tenant_id AND n.session_id = e.session_id
                AND n.run_id = e.run_id AND n.expires_at > ?)
              ORDER BY expires_at ${LIMIT_PARAM}${d.claimRows})`,
          [now, now, size],
        ),
      between: this.between,
    });
    this.deleted.add('run_events', events);
    // Once per sweep (its last, short call), not after every batch: the storage comes back when it is done.
    if (removed < limit) await this.reclaim();
    return removed;
  }

  /**
   * Hands the rows deleted since the last reclaim to the driver, which decides what is worth giving back.
   * Never throws: an error goes to `onReclaimError` and `reclaimErrors`.
   */
  private async reclaim(): Promise<void> {
    const reclaim = this.driver.reclaim?.bind(this.driver);
    if (reclaim === undefined) return;
    const deleted = this.deleted.snapshot();
    try {
      this.deleted.settle(deleted, await reclaim(deleted));
    } catch (cause) {
      const error = storeUnavailable(this.driver.dialect.name, cause);
      this.failedReclaims += 1;
      this.lastReclaimError = error;
      try {
        this.onReclaimError?.(error);
      } catch {
        // the hook's own failure changes nothing of the sweep
      }
    }
  }

  /** How many storage reclaims after sweeps failed since the store opened, and the last one's error. */
  get reclaimErrors(): { readonly count: number; readonly last: unknown } {
    return { count: this.failedReclaims, last: this.lastReclaimError };
  }

  sessionStats(now_ms: number): Promise<Record<SessionStatus, number>> {
    const now = isoAt(now_ms);
    return this.driver.snapshot(async (q: SqlExecutor) => {
      const stats = emptyStats();
      for (const status of LIVE_STATUSES) {
        const row = await q.get('SELECT COUNT(*) AS n FROM sessions WHERE status = ? AND expires_at > ?', [
          status,
          now,
        ]);
        stats[status] = Number(row?.n ?? 0);
      }
      return stats;
    });
  }

  actionStats(): Promise<ActionStats> {
    return this.driver.snapshot(countActions);
  }

  async sweepRetention(r: CheckedRetention): Promise<RetentionSweep> {
    const { tasks, actions, checkpoints } = await this.sweepRetentionDetailed(r);
    return { tasks, actions, checkpoints };
  }

  /** sweepRetention, also naming the tasks it deleted. */
  async sweepRetentionDetailed(r: CheckedRetention): Promise<DetailedSweep> {
    const run = {
      write: <T>(work: (tx: SqlExecutor) => Promise<T>) => this.driver.transaction(work),
      between: this.between,
      dialect: this.driver.dialect,
      pacers: this.pacers,
      tally: this.deleted,
    };
    const swept = await sweepRetentionRows(run, r);
    if (Math.max(swept.tasks, swept.actions, swept.checkpoints) < r.limit) await this.reclaim();
    return swept;
  }
}
