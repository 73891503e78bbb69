/**
 * The right to run a session: a lease named `session:<id>`. A second process gets a `conflict` error and
 * never a second execution; a dead owner's lease expires after its TTL. The holder renews it while it runs.
 */
import { cryptoRandom } from '../core/clock.js';
import { AgentStateError, sessionNotFound } from '../core/errors.js';
import type { Session } from '../core/model.js';
import type { Lease, Scope, StateStore } from '../store/types.js';

/** Long enough to ride out a GC pause or a slow commit (the holder renews every third of it). */
export const DEFAULT_LEASE_TTL_MS = 10_000;

export function defaultLeaseOwner(): string {
  return `pid${process.pid}-${Buffer.from(cryptoRandom(6)).toString('hex')}`;
}

export interface HeldLease {
  readonly name: string;
  readonly owner: string;
  /** False once released (by `release`, or by a commit that freed it: `releasedWith`). */
  readonly held: boolean;
  /** The expiry the store last granted (TurnBatch.release_lease.expires_at). */
  readonly expiresAt: string;
  /**
   * Extends the lease once a third of its TTL has passed since it was taken or last extended (before that
   * it cannot have run out, and a store call per commit would be wasted); throws `conflict` when another
   * owner took it (ours had expired).
   */
  renew(): Promise<void>;
  release(): Promise<void>;
  /** Told that a commit freed the lease (TurnBatch.release_lease): stops renewing it; `release` does nothing. */
  releasedWith(): void;
}

export async function acquireSessionLease(
  store: StateStore,
  scope: Scope,
  sessionId: string,
  owner: string,
  ttlMs: number,
  waitMs = 0,
): Promise<HeldLease> {
  const name = sessionLeaseName(sessionId);
  const deadline = Date.now() + waitMs;
  let askedAt = Date.now();
  let lease = await store.acquireLease(scope, name, owner, ttlMs);
  // A process that died holding the lease frees it when its TTL runs out: a resumer may wait for that.
  while (lease === null && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, Math.min(100, Math.max(10, deadline - Date.now()))));
    askedAt = Date.now();
    lease = await store.acquireLease(scope, name, owner, ttlMs);
  }
  if (lease === null) {
    throw new AgentStateError(
      'conflict',
      `session ${sessionId} is being run by another process; its lease is held until it finishes or expires (ttl ${ttlMs} ms)`,
      { details: { session_id: sessionId, lease: name } },
    );
  }
  return holdSessionLease(store, scope, sessionId, { lease, askedAt, ttlMs });
}

/** The lease of a session's runs. */
export function sessionLeaseName(sessionId: string): string {
  return `session:${sessionId}`;
}

/**
 * A session's lease the store granted (`acquireLease`, or `getSessionHead` with `lease`), held: renewed
 * while the run goes on. `askedAt`: when the store was asked for it (Date.now()).
 */
export function holdSessionLease(
  store: StateStore,
  scope: Scope,
  sessionId: string,
  granted: { readonly lease: Lease; readonly askedAt: number; readonly ttlMs: number },
): HeldLease {
  const { lease, askedAt, ttlMs } = granted;
  const { name, owner } = lease;
  let released = false;
  let expiresAt = lease.expires_at;
  const renewEvery = Math.max(1_000, Math.floor(ttlMs / 3));
  // Counted from before the store was asked, so the lease is known to live at least until renewedAt + ttl.
  let renewedAt = askedAt;
  const extend = async () => {
    if (released) return;
    const startedAt = Date.now();
    const again = await store.acquireLease(scope, name, owner, ttlMs);
    if (again === null) {
      throw new AgentStateError('conflict', `session ${sessionId}: the lease was lost to another process`, {
        details: { session_id: sessionId, lease: name },
      });
    }
    renewedAt = startedAt;
    expiresAt = again.expires_at;
  };
  const renew = async () => {
    if (Date.now() - renewedAt < ttlMs / 3) return;
    await extend();
  };
  const timer = setInterval(() => {
    extend().catch(() => {
      // The next commit renews again and reports the loss.
    });
  }, renewEvery);
  timer.unref();
  return {
    name,
    owner,
    get held() {
      return !released;
    },
    get expiresAt() {
      return expiresAt;
    },
    renew,
    release: async () => {
      if (released) return;
      released = true;
      clearInterval(timer);
      await store.releaseLease(scope, name, owner).catch(() => false);
    },
    releasedWith: () => {
      released = true;
      clearInterval(timer);
    },
  };
}

/**
 * The session's lease taken with the session in one store call (`getSessionHead`'s `lease`: one statement on
 * PostgreSQL). When another process holds the lease, it is asked for as `acquireSessionLease` does (waiting
 * up to `waitMs`) and the session read under it. `not_found` when the session is not there (or expired),
 * with no lease left held.
 */
export async function leaseWithSession(
  store: StateStore,
  scope: Scope,
  sessionId: string,
  options: { readonly owner: string; readonly ttlMs: number; readonly waitMs: number },
): Promise<{ lease: HeldLease; session: Session }> {
  const { owner, ttlMs, waitMs } = options;
  const askedAt = Date.now();
  const head = await store.getSessionHead(scope, sessionId, {
    lease: { name: sessionLeaseName(sessionId), owner, ttl_ms: ttlMs },
  });
  if (head === null) throw sessionNotFound(sessionId);
  if (head.lease) {
    const lease = holdSessionLease(store, scope, sessionId, { lease: head.lease, askedAt, ttlMs });
    return { lease, session: head.session };
  }
  const lease = await acquireSessionLease(store, scope, sessionId, owner, ttlMs, waitMs);
  const session = await store.getSession(scope, sessionId).catch(async (error: unknown) => {
    await lease.release();
    throw error;
  });
  if (session !== null) return { lease, session };
  await lease.release();
  throw sessionNotFound(sessionId);
}
