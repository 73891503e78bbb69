/**
 * A turn's run under its session's lease: the lease taken for the run (or taken again after it, for
 * compaction), and the header and journal of an interrupted run read back from its checkpoint.
 */
import { AgentStateError, isAgentStateError } from '../core/errors.js';
import type { Checkpoint } from '../core/model.js';
import type { JournalEntry } from './journal.js';
import { acquireSessionLease, DEFAULT_LEASE_TTL_MS, defaultLeaseOwner, type HeldLease } from './lease.js';
import type { RunHeader } from './run-context.js';
import { instanceLeaseOwner } from './run-marks.js';
import type { RuntimeOptions } from './turn.js';

export function headerOf(checkpoint: Checkpoint): RunHeader {
  const run = checkpoint.channels.run as unknown as RunHeader | undefined;
  if (run === undefined || typeof run.input !== 'string') {
    throw new AgentStateError('internal', `checkpoint ${checkpoint.id} has no run header`);
  }
  return run;
}

export function journalOf(checkpoint: Checkpoint): JournalEntry[] {
  const journal = checkpoint.channels.journal;
  return Array.isArray(journal) ? (journal as unknown as JournalEntry[]) : [];
}

/** Runs `work` under the session's lease taken again by `owner`, or skips it when another holds the lease. */
export async function underLeaseAgain(options: RuntimeOptions, owner: string, work: () => Promise<unknown>) {
  let lease: HeldLease;
  try {
    lease = await acquireSessionLease(
      options.store,
      options.scope,
      options.sessionId,
      owner,
      options.lease?.ttlMs ?? DEFAULT_LEASE_TTL_MS,
    );
  } catch (error) {
    if (!isAgentStateError(error, 'conflict')) options.context?.onCompactionError?.(error);
    return;
  }
  try {
    await work();
  } finally {
    await lease.release();
  }
}

export async function withLease<T>(
  options: RuntimeOptions,
  work: (lease: HeldLease) => Promise<T>,
): Promise<T> {
  const lease = await acquireSessionLease(
    options.store,
    options.scope,
    options.sessionId,
    options.lease?.owner ??
      (options.recovery === undefined ? defaultLeaseOwner() : instanceLeaseOwner(options.recovery)),
    options.lease?.ttlMs ?? DEFAULT_LEASE_TTL_MS,
    options.lease?.waitMs ?? 0,
  );
  try {
    return await work(lease);
  } finally {
    await lease.release();
  }
}
