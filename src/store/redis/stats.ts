/**
 * Session counts by status for the active-sessions gauge, without a scan: one sorted set per status,
 * `P:{stats}:st:<status>`, holding `<tenant>:<user>:<session id>` (escaped) scored by expires ms; the
 * count is a ZCOUNT of the scores after now.
 *
 * These keys carry their own hash tag (one slot for all of them, not the user's), so the user's atomic
 * script cannot write them: every session write adds the entry right after its script committed (plan.after),
 * in one MULTI. Best effort: a failure there, or two writers of one session finishing in the other order,
 * can leave an entry stale until the session's next write or the sweep (which drops entries of swept
 * sessions and every entry whose expiry has passed). Each set has the native TTL of its longest-lived
 * session, so idle sets vanish with their sessions, sweeper or not. The gauge is a monitor, never a
 * source of truth.
 */
import type { Session, SessionStatus } from '../../core/model.js';
import { emptyStats, LIVE_STATUSES } from '../shared/retention.js';
import { escapeKeyPart } from './keys.js';
import type { Ctx, Plan } from './plan.js';
import { nativeTtlMs } from './scope.js';

export function statsKey(prefix: string, status: SessionStatus): string {
  return `${prefix}:{stats}:st:${status}`;
}

function member(tenant: string, user: string, id: string): string {
  return `${escapeKeyPart(tenant)}:${escapeKeyPart(user)}:${id}`;
}

/** After the plan commits: the session counted under its status with its expiry, and under no other. */
export function countAfterCommit(plan: Plan, session: Session): void {
  const ctx = plan.ctx;
  plan.after.push(async () => {
    const m = member(session.tenant_id, session.user_id, session.id);
    const multi = ctx.redis.multi();
    const expires = Date.parse(session.expires_at);
    const ttl = nativeTtlMs(expires, ctx.clock.now(), session.ttl_seconds);
    for (const status of LIVE_STATUSES) {
      const key = statsKey(ctx.prefix, status);
      if (status !== session.status) {
        multi.zrem(key, m);
        continue;
      }
      multi.zadd(key, expires, m);
      // The set lives as long as its longest-lived session, like the sessions themselves (NX, then GT).
      multi.pexpire(key, ttl, 'NX');
      multi.pexpire(key, ttl, 'GT');
    }
    await multi.exec().catch(() => undefined);
  });
}

/** The session no longer counted (deleted or swept). Best effort. */
export async function uncount(ctx: Ctx, tenant: string, user: string, id: string): Promise<void> {
  const m = member(tenant, user, id);
  const multi = ctx.redis.multi();
  for (const status of LIVE_STATUSES) multi.zrem(statsKey(ctx.prefix, status), m);
  await multi.exec().catch(() => undefined);
}

/** Drops every entry whose expiry has passed (called by the sweep). */
export async function pruneCounts(ctx: Ctx, nowMs: number): Promise<void> {
  const multi = ctx.redis.multi();
  for (const status of LIVE_STATUSES) multi.zremrangebyscore(statsKey(ctx.prefix, status), '-inf', nowMs);
  await multi.exec();
}

export async function sessionStats(ctx: Ctx, now: number): Promise<Record<SessionStatus, number>> {
  const stats = emptyStats();
  const counts = await Promise.all(
    LIVE_STATUSES.map((status) => ctx.redis.zcount(statsKey(ctx.prefix, status), `(${now}`, '+inf')),
  );
  LIVE_STATUSES.forEach((status, i) => {
    stats[status] = counts[i] ?? 0;
  });
  return stats;
}
