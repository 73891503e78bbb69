/**
 * Holds: a fork reads ranges of other sessions' stored messages, so it keeps those sessions' rows
 * (`retained_until`) while it lives; a row past its own expiry stays invisible, only kept. Renewing a fork
 * past what it held holds again, for twice its TTL, so a busy fork writes a hold once per TTL at most.
 */
import { isoAt } from '../../core/clock.js';
import { versionConflict } from '../../core/errors.js';
import type { Session, SessionHistory } from '../../core/model.js';
import type { Scope } from '../types.js';
import { notFound, type WriteOp } from './context.js';

const ownerOf = (s: Session): Scope => ({ tenant_id: s.tenant_id, user_id: s.user_id });

/** Keeps the line's stored session (and so its messages) until `until` at least. */
async function holdLine(op: WriteOp, owner: Scope, line: string, until: string): Promise<void> {
  let version = 0;
  for (let attempt = 0; attempt < 5; attempt++) {
    const stored = await op.tx.getSession({ tenant_id: owner.tenant_id }, line);
    if (stored === null) throw notFound(op.env, 'session', line);
    if (stored.retained_until !== undefined && stored.retained_until >= until) return;
    if (await op.tx.replaceSession({ ...stored, retained_until: until }, stored)) return;
    version = stored.version;
  }
  throw versionConflict(op.env.adapter, 'session', line, version, null);
}

/** Holds every line a history reads for twice the session's TTL from now; the held time to record. */
export async function holdHistory(op: WriteOp, session: Session, history: SessionHistory): Promise<string> {
  const until = isoAt(op.now + 2 * session.ttl_seconds * 1000);
  const lines = new Set(history.segments.map((s) => s.line).filter((line) => line !== session.id));
  for (const line of lines) await holdLine(op, ownerOf(session), line, until);
  return until;
}

/** `next` with its history held long enough for its new expiry (the holds written). */
export async function withHolds(op: WriteOp, next: Session): Promise<Session> {
  const h = next.history;
  if (h === undefined || next.expires_at <= h.held_until) return next;
  if (!h.segments.some((s) => s.line !== next.id)) return next;
  return { ...next, history: { ...h, held_until: await holdHistory(op, next, h) } };
}
