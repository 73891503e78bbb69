/** Maintenance: expiry and retention sweeps and the gauges' counts, across all tenants. */
import type { SessionStatus } from '../../core/model.js';

/** Actions not finished yet, across all tenants (see StateStore.actionStats). */
export interface ActionStats {
  readonly pending: number;
  readonly unknown: number;
}

/** ISO-8601 UTC instants: records older than these are removed by sweepRetention. */
export interface RetentionCutoffs {
  readonly tasks_before?: string;
  readonly actions_before?: string;
  readonly checkpoints_before?: string;
}

export interface RetentionSweep {
  readonly tasks: number;
  readonly actions: number;
  readonly checkpoints: number;
}

export interface MaintenanceCalls {
  /** Deletes up to `limit` expired sessions with their messages; returns the count. Tasks, actions, checkpoints stay. */
  sweepExpired(limit: number): Promise<number>;
  /**
   * Sessions not yet expired, by status (every status a key, 0 when none; `expired` is always 0), across
   * all tenants: for the active-sessions gauge. Cheap: an indexed count or maintained counters, never a
   * scan of every session.
   */
  sessionStats(): Promise<Record<SessionStatus, number>>;
  /**
   * Actions in status PENDING and UNKNOWN (waiting for a person to resolve them), across all tenants: for
   * the UNKNOWN-actions gauge. Cheap: an indexed count or maintained counters, never a scan of every action.
   */
  actionStats(): Promise<ActionStats>;
  /**
   * Retention, across all tenants, up to `limit` records of each kind per call: checkpoints created before
   * `checkpoints_before` (with the blobs no kept checkpoint needs), finished actions (SUCCESS / FAILED, never
   * PENDING / UNKNOWN) last changed before `actions_before`, and tasks last changed before `tasks_before`
   * with their events, actions and checkpoints. An absent cutoff deletes nothing of that kind. Returns
   * how many of each were deleted (a task's own actions and checkpoints count in `actions`/`checkpoints`).
   */
  sweepRetention(cutoffs: RetentionCutoffs, limit: number): Promise<RetentionSweep>;
}
