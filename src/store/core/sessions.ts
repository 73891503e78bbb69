/** Sessions: sliding TTL, optimistic versions, invisible the moment they expire. */
import { isoAt } from '../../core/clock.js';
import { versionConflict } from '../../core/errors.js';
import { newId } from '../../core/ids.js';
import { SESSION_STATUSES, SESSION_TRANSITIONS, type Session, type SessionStatus } from '../../core/model.js';
import { SESSION_FIELDS, SESSION_PATCH_FIELDS, SESSION_QUERY_FIELDS } from '../shared/known-fields.js';
import type { NewSession, Page, ReadScope, Scope, SessionPatch, SessionQuery } from '../types.js';
import { type CoreEnv, conflict, notFound, type Op, type WriteOp } from './context.js';
import { withHolds } from './holds.js';
import { askPage, toPage } from './paging.js';

export interface CheckedSessionPatch {
  readonly status?: SessionStatus;
  readonly context?: Session['context'];
  readonly agent?: string | null;
  readonly ttl_seconds?: number;
}

export function checkSessionPatch(env: CoreEnv, patch: SessionPatch, path: string): CheckedSessionPatch {
  const { v } = env;
  v.record(patch, path, SESSION_PATCH_FIELDS);
  const out: { -readonly [K in keyof CheckedSessionPatch]: CheckedSessionPatch[K] } = {};
  if (patch.status !== undefined) out.status = v.oneOf(patch.status, SESSION_STATUSES, `${path}.status`);
  if (patch.context !== undefined) out.context = v.jsonObject(patch.context, 'session.context');
  if (patch.agent !== undefined)
    out.agent = patch.agent === null ? null : v.name(patch.agent, `${path}.agent`);
  if (patch.ttl_seconds !== undefined)
    out.ttl_seconds = v.positiveInt(patch.ttl_seconds, `${path}.ttl_seconds`);
  return out;
}

const expired = (session: Session, now: number) => Date.parse(session.expires_at) <= now;

/** The session when it exists in scope and has not expired; otherwise null. */
export async function liveSession(op: Op, scope: ReadScope, id: string): Promise<Session | null> {
  const session = await op.tx.getSession(scope, id);
  return session === null || expired(session, op.now) ? null : session;
}

export async function requireSession(op: Op, scope: ReadScope, id: string): Promise<Session> {
  const session = await liveSession(op, scope, id);
  if (session === null) throw notFound(op.env, 'session', id);
  return session;
}

/**
 * A record that names a session (a task, an action, a checkpoint) may only name one its owner can read:
 * their own live session, ended or not. `not_found` otherwise, as a read of it in that scope would say.
 */
export async function requireOwnSession(op: Op, scope: Scope, id: string | null): Promise<void> {
  if (id !== null) await requireSession(op, scope, id);
}

/** Renewed activity: last_activity_at now, expires_at now + ttl. */
export function renewed(now: number, session: Session): Session {
  return { ...session, last_activity_at: isoAt(now), expires_at: isoAt(now + session.ttl_seconds * 1000) };
}

/** Writes `next` over `previous`; a concurrent change in between is a version conflict. */
export async function replaceSession(op: WriteOp, renewedNext: Session, previous: Session): Promise<Session> {
  const next = await withHolds(op, renewedNext);
  if (!(await op.tx.replaceSession(next, previous))) {
    const now = await op.tx.getSession({ tenant_id: previous.tenant_id }, previous.id);
    throw versionConflict(op.env.adapter, 'session', previous.id, previous.version, now?.version ?? null);
  }
  return next;
}

export async function createSession(op: WriteOp, scope: Scope, input: NewSession): Promise<Session> {
  const { v } = op.env;
  v.record(input, 'session', SESSION_FIELDS);
  const id = v.optionalId(input.id, 'session', 'session.id') ?? newId('session', op.env.random);
  const agent =
    input.agent === undefined || input.agent === null ? null : v.name(input.agent, 'session.agent');
  const context = input.context === undefined ? {} : v.jsonObject(input.context, 'session.context');
  const ttl =
    input.ttl_seconds === undefined
      ? op.env.defaultTtlSeconds
      : v.positiveInt(input.ttl_seconds, 'session.ttl_seconds');
  const status: SessionStatus =
    input.status === undefined ? 'active' : v.oneOf(input.status, SESSION_STATUSES, 'session.status');
  if (status === 'expired') v.fail('session.status cannot be expired: expiry is set by time');
  const at = isoAt(op.now);
  const session: Session = {
    id,
    tenant_id: scope.tenant_id,
    user_id: scope.user_id,
    agent,
    status,
    context,
    version: 1,
    ttl_seconds: ttl,
    created_at: at,
    updated_at: at,
    last_activity_at: at,
    expires_at: isoAt(op.now + ttl * 1000),
    ended_at: status === 'ended' ? at : null,
  };
  if (!(await op.tx.insertSession(session))) throw conflict(op.env, 'session', id);
  return session;
}

export async function listSessions(
  op: Op,
  scope: ReadScope,
  query: SessionQuery = {},
): Promise<Page<Session>> {
  const { v } = op.env;
  v.record(query, 'query', SESSION_QUERY_FIELDS);
  const status = query.status === undefined ? undefined : v.oneOf(query.status, SESSION_STATUSES, 'status');
  const asked = await askPage(op.env, 'sessions', scope, query);
  const filter = { ...(status === undefined ? {} : { status }), liveAt: isoAt(op.now) };
  return await toPage(op.env, asked, await op.tx.listSessions(scope, filter, asked.request));
}

/** Applies a checked patch when `expected` is the current version: the version goes up, the TTL is renewed. */
export async function applySessionPatch(
  op: WriteOp,
  scope: ReadScope,
  id: string,
  expected: number,
  patch: CheckedSessionPatch,
): Promise<Session> {
  const current = await requireSession(op, scope, id);
  if (current.version !== expected)
    throw versionConflict(op.env.adapter, 'session', id, expected, current.version);
  const next: Session = { ...current, version: current.version + 1, updated_at: isoAt(op.now) };
  if (patch.status !== undefined && patch.status !== current.status) {
    if (!SESSION_TRANSITIONS[current.status].includes(patch.status)) {
      op.env.v.fail(`session ${id}: cannot go from ${current.status} to ${patch.status}`);
    }
    next.status = patch.status;
    if (patch.status === 'ended') next.ended_at = isoAt(op.now);
  }
  if (patch.context !== undefined) next.context = patch.context;
  if (patch.agent !== undefined) next.agent = patch.agent;
  if (patch.ttl_seconds !== undefined) next.ttl_seconds = patch.ttl_seconds;
  return replaceSession(op, renewed(op.now, next), current);
}

export async function touchSession(op: WriteOp, scope: ReadScope, id: string): Promise<Session | null> {
  const current = await liveSession(op, scope, id);
  if (current === null) return null;
  return replaceSession(op, renewed(op.now, current), current);
}

/** Status `ended` with a new version; an ended session is returned as it is. */
export async function endSession(op: WriteOp, scope: ReadScope, id: string): Promise<Session | null> {
  const current = await liveSession(op, scope, id);
  if (current === null) return null;
  if (current.status === 'ended') return current;
  const at = isoAt(op.now);
  const ended: Session = {
    ...current,
    status: 'ended',
    ended_at: at,
    updated_at: at,
    version: current.version + 1,
  };
  return replaceSession(op, ended, current);
}

export async function deleteSession(op: WriteOp, scope: ReadScope, id: string): Promise<boolean> {
  const current = await liveSession(op, scope, id);
  if (current === null) return false;
  if (current.retained_until !== undefined && Date.parse(current.retained_until) > op.now) {
    // Forks still read its messages: gone for its readers now, kept until the forks no longer need it.
    const at = isoAt(op.now);
    const hidden: Session = { ...current, status: 'ended', ended_at: current.ended_at ?? at, expires_at: at };
    await replaceSession(op, { ...hidden, version: current.version + 1, updated_at: at }, current);
    return true;
  }
  await op.tx.deleteSession(current);
  return true;
}
