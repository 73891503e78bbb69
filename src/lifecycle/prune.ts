/**
 * Checkpoints of a finished run: only the last few are worth keeping (to inspect how it ended); the rest
 * of its history goes, with the blobs only those needed. The runtime calls this when a run completes.
 */
import { invalidRequest } from '../core/errors.js';
import type { ReadScope, StateStore } from '../store/types.js';

export const DEFAULT_KEEP_CHECKPOINTS = 3;

/** Keeps the newest `keep` checkpoints of a completed run; returns how many were removed. */
export async function pruneCompletedRun(
  store: StateStore,
  scope: ReadScope,
  runId: string,
  keep = DEFAULT_KEEP_CHECKPOINTS,
): Promise<number> {
  if (!Number.isInteger(keep) || keep < 1) {
    throw invalidRequest(`keep must be a positive whole number of checkpoints, got ${keep}`);
  }
  return store.pruneCheckpoints(scope, runId, keep);
}
