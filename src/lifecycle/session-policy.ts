/**
 * How long a session lives: a sliding TTL (default 30 minutes, settable per server and per session), and
 * a longer wait while the agent waits for the user (`waiting_for_user`, default 24 hours). Call
 * `changeSessionStatus` (or put `sessionStatusPatch` into a turn's session patch) whenever a session
 * changes status: it sets the TTL that status deserves.
 */
import { invalidRequest } from '../core/errors.js';
import type { Session, SessionStatus } from '../core/model.js';
import type { ReadScope, SessionPatch, StateStore } from '../store/types.js';
import { DEFAULT_SESSION_TTL_SECONDS } from '../store/types.js';

export interface SessionPolicy {
  /** TTL of an active (or paused) session, in seconds. Default 1800. */
  readonly ttlSeconds?: number;
  /** TTL while waiting for the user, in seconds. Default 86400 (24 h). */
  readonly waitingTtlSeconds?: number;
}

export const DEFAULT_WAITING_TTL_SECONDS = 86_400;

function seconds(value: number | undefined, fallback: number, field: string): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 1) {
    throw invalidRequest(`session policy ${field} must be a positive whole number of seconds, got ${value}`);
  }
  return value;
}

/**
 * The patch that moves `session` to `status` with the TTL of that status: entering `waiting_for_user`
 * raises the TTL to waitingTtlSeconds (a longer TTL of the session is kept); leaving it brings the TTL
 * back to ttlSeconds. Other changes keep the session's own TTL (a per-session TTL stays).
 */
export function sessionStatusPatch(
  session: Pick<Session, 'status' | 'ttl_seconds'>,
  status: SessionStatus,
  policy: SessionPolicy = {},
): SessionPatch {
  const ttl = seconds(policy.ttlSeconds, DEFAULT_SESSION_TTL_SECONDS, 'ttlSeconds');
  const waiting = seconds(policy.waitingTtlSeconds, DEFAULT_WAITING_TTL_SECONDS, 'waitingTtlSeconds');
  if (status === 'waiting_for_user') return { status, ttl_seconds: Math.max(session.ttl_seconds, waiting) };
  if (session.status === 'waiting_for_user') return { status, ttl_seconds: ttl };
  return { status };
}

/** Updates the session's status and TTL by the policy (optimistic: fails with version_conflict when stale). */
export function changeSessionStatus(
  store: StateStore,
  scope: ReadScope,
  session: Session,
  status: SessionStatus,
  policy: SessionPolicy = {},
): Promise<Session> {
  return store.updateSession(scope, session.id, session.version, sessionStatusPatch(session, status, policy));
}
