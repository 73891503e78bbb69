/**
 * A turn's run under its session's lease: the lease taken for the run (or taken again after it, for
 * compaction), and the header and journal of an interrupted run read back from its checkpoint.
 */
import { AgentStateError, isAgentStateError } from '../core/errors.js';
import type { Checkpoint } from '../core/model.js';
import type { JournalEntry } from './journal.js';
import {
  acquireSessionLease,
  DEFAULT_LEASE_TTL_MS,
  defaultLeaseOwner,
  type HeldLease,
  holdSessionLease,
  sessionLeaseName,
} from './lease.js';
import type { RunHeader } from './run-context.js';
import { instanceLeaseOwner } from './run-marks.js';
import { findRun, headOptions, type Pending, pendingOf } from './runs.js';
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

function leaseOwner(options: RuntimeOptions): string {
  return (
    options.lease?.owner ??
    (options.recovery === undefined ? defaultLeaseOwner() : instanceLeaseOwner(options.recovery))
  );
}

export async function withLease<T>(
  options: RuntimeOptions,
  work: (lease: HeldLease) => Promise<T>,
): Promise<T> {
  const lease = await acquireSessionLease(
    options.store,
    options.scope,
    options.sessionId,
    leaseOwner(options),
    options.lease?.ttlMs ?? DEFAULT_LEASE_TTL_MS,
    options.lease?.waitMs ?? 0,
  );
  try {
    return await work(lease);
  } finally {
    await lease.release();
  }
}

/**
 * `withLease` for a turn: the lease taken with the session's head in one store call (one statement on
 * PostgreSQL), and what the new run starts from found in that head. When another process holds the
 * lease, it is asked for as `withLease` does (waiting when `lease.waitMs` says so) and the head read after.
 */
export async function withLeasedHead<T>(
  options: RuntimeOptions,
  work: (lease: HeldLease, pending: Pending) => Promise<T>,
): Promise<T> {
  const { store, scope, sessionId } = options;
  const owner = leaseOwner(options);
  const ttlMs = options.lease?.ttlMs ?? DEFAULT_LEASE_TTL_MS;
  const askedAt = Date.now();
  const head = await store.getSessionHead(
    scope,
    sessionId,
    headOptions({ name: sessionLeaseName(sessionId), owner, ttl_ms: ttlMs }),
  );
  const granted = head?.lease ?? null;
  if (head === null || granted === null) {
    // Not found (pendingOf says so), or held by another.
    if (head === null) await pendingOf(store, scope, sessionId, head);
    return withLease(options, async (lease) => work(lease, await findRun(store, scope, sessionId, true)));
  }
  const lease = holdSessionLease(store, scope, sessionId, { lease: granted, askedAt, ttlMs });
  try {
    return await work(lease, await pendingOf(store, scope, sessionId, head));
  } finally {
    await lease.release();
  }
}
