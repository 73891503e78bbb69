/**
 * Retention of what outlives sessions: tasks (with their events, actions and checkpoints), finished actions
 * and checkpoints, each kept for its own number of days (default 30), then deleted by the sweeper in
 * batches through the store's sweepRetention.
 */
import { invalidRequest } from '../core/errors.js';
import type { RetentionCutoffs, RetentionSweep, StateStore } from '../store/types.js';

export interface RetentionPolicy {
  /** Days a task is kept after its last change (with its events, actions, checkpoints). Default 30; null keeps forever. */
  readonly taskDays?: number | null;
  /** Days a finished (SUCCESS / FAILED) action is kept after its last change. Default 30; null keeps forever. */
  readonly actionDays?: number | null;
  /** Days a checkpoint is kept after it was written. Default 30; null keeps forever. */
  readonly checkpointDays?: number | null;
}

export const DEFAULT_RETENTION_DAYS = 30;
const DAY_MS = 86_400_000;

function days(value: number | null | undefined, field: string): number | null {
  if (value === undefined) return DEFAULT_RETENTION_DAYS;
  if (value === null) return null;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw invalidRequest(
      `retention.${field} must be a positive number of days or null, got ${String(value)}`,
    );
  }
  return value;
}

/** The cutoffs of a policy at `nowMs`: what is older than these goes. */
export function retentionCutoffs(policy: RetentionPolicy, nowMs: number): RetentionCutoffs {
  const at = (d: number | null) => (d === null ? undefined : new Date(nowMs - d * DAY_MS).toISOString());
  const cutoffs: { -readonly [K in keyof RetentionCutoffs]: RetentionCutoffs[K] } = {};
  const tasks = at(days(policy.taskDays, 'taskDays'));
  const actions = at(days(policy.actionDays, 'actionDays'));
  const checkpoints = at(days(policy.checkpointDays, 'checkpointDays'));
  if (tasks !== undefined) cutoffs.tasks_before = tasks;
  if (actions !== undefined) cutoffs.actions_before = actions;
  if (checkpoints !== undefined) cutoffs.checkpoints_before = checkpoints;
  return cutoffs;
}

/** Runs sweepRetention in batches until a batch comes back short or `max` records of a kind went. */
export async function sweepRetentionOnce(
  store: StateStore,
  cutoffs: RetentionCutoffs,
  batchSize = 500,
  max = 100_000,
): Promise<RetentionSweep> {
  const total = { tasks: 0, actions: 0, checkpoints: 0 };
  if (Object.keys(cutoffs).length === 0) return total;
  for (;;) {
    const swept = await store.sweepRetention(cutoffs, batchSize);
    total.tasks += swept.tasks;
    total.actions += swept.actions;
    total.checkpoints += swept.checkpoints;
    const full = Math.max(swept.tasks, swept.actions, swept.checkpoints) >= batchSize;
    if (!full || Math.max(total.tasks, total.actions, total.checkpoints) >= max) return total;
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}
