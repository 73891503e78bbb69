/**
 * What every adapter shares for the lifecycle calls: the check of sweepRetention's arguments and the shape
 * of sessionStats' answer. Checks run before anything is sent to a backing store.
 */
import { invalidRequest } from '../../core/errors.js';
import { SESSION_STATUSES, type SessionStatus } from '../../core/model.js';
import type { RetentionCutoffs } from '../types.js';

/** Largest number of records of one kind a sweepRetention call may delete. */
export const MAX_RETENTION_LIMIT = 100_000;

const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,3})?Z$/;

export interface CheckedRetention {
  /** Normalized to the stores' timestamp form (toISOString), so text comparison is time comparison. */
  readonly tasks_before: string | null;
  readonly actions_before: string | null;
  readonly checkpoints_before: string | null;
  readonly limit: number;
}

function cutoff(adapter: string, value: unknown, field: string): string | null {
  if (value === undefined) return null;
  if (typeof value !== 'string' || !ISO_UTC.test(value) || Number.isNaN(Date.parse(value))) {
    throw invalidRequest(`[${adapter}] ${field} must be an ISO-8601 UTC timestamp, got ${String(value)}`);
  }
  return new Date(Date.parse(value)).toISOString();
}

export function checkRetention(adapter: string, cutoffs: RetentionCutoffs, limit: number): CheckedRetention {
  if (typeof cutoffs !== 'object' || cutoffs === null || Array.isArray(cutoffs)) {
    throw invalidRequest(`[${adapter}] cutoffs must be an object`);
  }
  for (const field of Object.keys(cutoffs)) {
    if (!['tasks_before', 'actions_before', 'checkpoints_before'].includes(field)) {
      throw invalidRequest(`[${adapter}] cutoffs.${field} is not a retention cutoff`);
    }
  }
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_RETENTION_LIMIT) {
    throw invalidRequest(
      `[${adapter}] limit must be an integer from 1 to ${MAX_RETENTION_LIMIT}, got ${String(limit)}`,
    );
  }
  return {
    tasks_before: cutoff(adapter, cutoffs.tasks_before, 'cutoffs.tasks_before'),
    actions_before: cutoff(adapter, cutoffs.actions_before, 'cutoffs.actions_before'),
    checkpoints_before: cutoff(adapter, cutoffs.checkpoints_before, 'cutoffs.checkpoints_before'),
    limit,
  };
}

/** Every status at 0. */
export function emptyStats(): Record<SessionStatus, number> {
  const stats = {} as Record<SessionStatus, number>;
  for (const status of SESSION_STATUSES) stats[status] = 0;
  return stats;
}

/** The statuses a live session can have (everything but `expired`, which is set by time). */
export const LIVE_STATUSES: readonly SessionStatus[] = SESSION_STATUSES.filter((s) => s !== 'expired');
