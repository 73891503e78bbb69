/**
 * A session's head: what a turn reads before it runs (the session, its newest message, optionally the
 * scope's open tasks and the next run's latest checkpoint label), by the driver's fast path when it has one.
 */
import { isoAt } from '../../core/clock.js';
import { OPEN_TASK_STATES } from '../../core/model.js';
import { runIdFor } from '../../core/run-id.js';
import { HEAD_LEASE_FIELDS, SESSION_HEAD_FIELDS } from '../shared/known-fields.js';
import { checkNextRunOption } from '../shared/next-run.js';
import {
  type HeadLease,
  type Lease,
  MAX_PAGE_LIMIT,
  type ReadScope,
  type Scope,
  type SessionHead,
  type SessionHeadOptions,
} from '../types.js';
import type { CoreEnv, Op } from './context.js';
import type { DriverFastPaths, HeadReads } from './driver.js';
import { readLastMessages } from './history.js';
import { liveSession } from './sessions.js';

export function checkHeadOptions(env: CoreEnv, options: SessionHeadOptions): HeadReads {
  const { v } = env;
  v.record(options, 'options', SESSION_HEAD_FIELDS);
  let openTasks: number | null = null;
  if (options.open_tasks !== undefined) {
    openTasks = v.positiveInt(options.open_tasks, 'options.open_tasks');
    if (openTasks > MAX_PAGE_LIMIT) v.fail(`options.open_tasks must be at most ${MAX_PAGE_LIMIT}`);
  }
  return { openTasks, nextRun: checkNextRunOption(options.next_run, `[${env.adapter}] `) };
}

/** SessionHeadOptions.lease, when asked, checked: a user's scope, acquireLease's name, owner and ttl. */
export function checkHeadLease(env: CoreEnv, scope: ReadScope, lease: HeadLease): HeadLease {
  const { v } = env;
  v.record(lease, 'options.lease', HEAD_LEASE_FIELDS);
  if (scope.user_id === undefined) v.fail('options.lease needs a scope with a user_id');
  v.name(lease.name, 'options.lease.name');
  v.name(lease.owner, 'options.lease.owner');
  v.positiveInt(lease.ttl_ms, 'options.lease.ttl_ms');
  return { name: lease.name, owner: lease.owner, ttl_ms: lease.ttl_ms };
}

/** The calls a leased head is made of, on whatever store answers them. */
export interface LeasedHeadSteps {
  acquire(): Promise<Lease | null>;
  release(): Promise<unknown>;
  /** The head without a lease, read now. */
  head(): Promise<SessionHead | null>;
}

/**
 * getSessionHead with a lease, the generic way: the lease first, then the head, read after it. A lease
 * taken for a session that is not there is freed again.
 */
export async function leaseThenHead(steps: LeasedHeadSteps): Promise<SessionHead | null> {
  const lease = await steps.acquire();
  const head = await steps.head();
  if (head === null) {
    if (lease !== null) await steps.release();
    return null;
  }
  return { ...head, lease };
}

/** What the store core lends a leased head: its lease calls, and a read with the core's clock. */
export interface LeasingStore {
  acquireLease(scope: Scope, name: string, owner: string, ttl_ms: number): Promise<Lease | null>;
  releaseLease(scope: Scope, name: string, owner: string): Promise<boolean>;
  read<T>(work: (op: Op) => Promise<T>): Promise<T>;
}

/**
 * The core's getSessionHead with a lease: by the driver's one statement when it has one, whose answer
 * stands when it took the lease and read after every commit that freed it; otherwise (and to finish what
 * that statement could not) the generic path.
 */
export async function leasedHead(
  store: LeasingStore,
  fast: DriverFastPaths | undefined,
  scope: Scope,
  id: string,
  reads: HeadReads,
  lease: HeadLease,
): Promise<SessionHead | null> {
  const steps: LeasedHeadSteps = {
    acquire: () => store.acquireLease(scope, lease.name, lease.owner, lease.ttl_ms),
    release: () => store.releaseLease(scope, lease.name, lease.owner),
    head: () => store.read((op) => readSessionHead(op, fast, scope, id, reads)),
  };
  const leased = fast?.sessionHeadLeased;
  if (leased === undefined) return leaseThenHead(steps);
  const one = await store.read(async (op) => {
    const taken = { name: lease.name, owner: lease.owner, expires_at: isoAt(op.now + lease.ttl_ms) };
    return { ...(await leased(scope, id, reads, taken, isoAt(op.now))), lease: taken };
  });
  if (one.head === null) return null;
  if (!one.taken) return leaseThenHead(steps);
  // A fork's head is the generic path's (readSessionHead), as is one read before a commit that freed the lease.
  const head = one.fresh && one.head.session.history === undefined ? one.head : await steps.head();
  if (head === null) {
    await steps.release();
    return null;
  }
  return { ...head, lease: one.lease };
}

/** The head by `fast` when the driver has it (a fork's falls back: its newest message may be an ancestor's). */
export async function readSessionHead(
  op: Op,
  fast: DriverFastPaths | undefined,
  scope: ReadScope,
  id: string,
  reads: HeadReads,
): Promise<SessionHead | null> {
  if (fast?.sessionHead !== undefined) {
    const head = await fast.sessionHead(scope, id, reads, isoAt(op.now));
    if (head === null || head.session.history === undefined) return head;
  }
  const session = await liveSession(op, scope, id);
  if (session === null) return null;
  const last = (await readLastMessages(op, session, 1))[0] ?? null;
  let head: SessionHead = { session, last_message: last };
  if (reads.openTasks !== null) {
    const open = await op.tx.listTasks(
      scope,
      { states: OPEN_TASK_STATES },
      { after: null, limit: reads.openTasks },
    );
    head = { ...head, open_tasks: open.map((row) => row.rec) };
  }
  if (reads.nextRun) {
    const runId = runIdFor(id, last?.seq ?? 0);
    const label = (await op.tx.latestCheckpoint(scope, runId))?.label ?? null;
    head = { ...head, next_run: { id: runId, checkpoint_label: label } };
  }
  return head;
}
