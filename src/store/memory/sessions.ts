/** Sessions: sliding TTL, optimistic versions, invisible the moment they expire. */

import { isoAt } from '../../core/clock.js';
import { AgentStateError, versionConflict } from '../../core/errors.js';
import { newId } from '../../core/ids.js';
import { SESSION_STATUSES, SESSION_TRANSITIONS, type Session, type SessionStatus } from '../../core/model.js';
import { SESSION_FIELDS, SESSION_PATCH_FIELDS, SESSION_QUERY_FIELDS } from '../shared/known-fields.js';
import type { NewSession, Page, ReadScope, Scope, SessionPatch, SessionQuery } from '../types.js';
import { type Ctx, copy, type Row } from './db.js';
import { newestFirst } from './paging.js';
import {
  ADAPTER,
  checkId,
  checkReadScope,
  checkScope,
  fail,
  inScope,
  jsonObject,
  name,
  oneOf,
  optionalId,
  positiveInt,
  record,
} from './validate.js';

export function notFound(kind: string, id: string): AgentStateError {
  return new AgentStateError('not_found', `[${ADAPTER}] ${kind} ${id} not found`, { details: { kind, id } });
}

function expired(session: Session, now: number): boolean {
  return Date.parse(session.expires_at) <= now;
}

/** The session when it exists, is in scope and has not expired; otherwise null. */
export function liveSession(c: Ctx, scope: ReadScope, id: string): Row<Session> | null {
  const row = c.t.sessions.get(id);
  if (row === undefined || !inScope(scope, row.rec) || expired(row.rec, c.now)) return null;
  return row;
}

export function requireSession(c: Ctx, scope: ReadScope, id: string): Row<Session> {
  const row = liveSession(c, scope, id);
  if (row === null) throw notFound('session', id);
  return row;
}

/**
 * A record that names a session (a task, an action, a checkpoint) may only name one its owner can read:
 * their own live session, ended or not. `not_found` otherwise, as a read of it in that scope would say.
 */
export function requireOwnSession(c: Ctx, scope: Scope, id: string | null | undefined): void {
  if (id !== null && id !== undefined) requireSession(c, scope, id);
}

/** Writes a new version of a stored session (same insertion order). */
export function putSession(c: Ctx, row: Row<Session>, rec: Session): Session {
  c.tx.set(c.t.sessions, rec.id, { seq: row.seq, rec });
  return rec;
}

/** Renewed activity: last_activity_at now, expires_at now + ttl. */
export function renewed(c: Ctx, session: Session): Session {
  return {
    ...session,
    last_activity_at: isoAt(c.now),
    expires_at: isoAt(c.now + session.ttl_seconds * 1000),
  };
}

export function createSession(c: Ctx, scope: Scope, input: NewSession): Session {
  checkScope(scope);
  record(input, 'session', SESSION_FIELDS);
  const id = optionalId(input.id, 'session', 'session.id') ?? newId('session', c.random);
  const agent = input.agent === undefined || input.agent === null ? null : name(input.agent, 'session.agent');
  const context = input.context === undefined ? {} : jsonObject(input.context, 'session.context');
  const ttl =
    input.ttl_seconds === undefined
      ? c.defaultTtlSeconds
      : positiveInt(input.ttl_seconds, 'session.ttl_seconds');
  const status: SessionStatus =
    input.status === undefined ? 'active' : oneOf(input.status, SESSION_STATUSES, 'session.status');
  if (status === 'expired') fail('session.status cannot be expired: expiry is set by time');
  if (c.t.sessions.has(id)) {
    throw new AgentStateError('conflict', `[${ADAPTER}] session ${id} already exists`, { details: { id } });
  }
  const at = isoAt(c.now);
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
    expires_at: isoAt(c.now + ttl * 1000),
    ended_at: status === 'ended' ? at : null,
  };
  c.tx.set(c.t.sessions, id, { seq: c.nextSeq(), rec: session });
  return copy(session);
}

export function getSession(c: Ctx, scope: ReadScope, id: string): Session | null {
  checkReadScope(scope);
  checkId(id, 'session', 'session id');
  const row = liveSession(c, scope, id);
  return row === null ? null : copy(row.rec);
}

export function listSessions(c: Ctx, scope: ReadScope, query: SessionQuery = {}): Page<Session> {
  checkReadScope(scope);
  record(query, 'query', SESSION_QUERY_FIELDS);
  const status = query.status === undefined ? undefined : oneOf(query.status, SESSION_STATUSES, 'status');
  const rows = [...c.t.sessions.values()].filter(
    (row) =>
      inScope(scope, row.rec) &&
      !expired(row.rec, c.now) &&
      (status === undefined || row.rec.status === status),
  );
  return newestFirst({ key: c.t.cursorKey, name: 'sessions', scope }, rows, query);
}

export interface CheckedSessionPatch {
  readonly status?: SessionStatus;
  readonly context?: Session['context'];
  readonly agent?: string | null;
  readonly ttl_seconds?: number;
}

export function checkSessionPatch(patch: SessionPatch, path: string): CheckedSessionPatch {
  record(patch, path, SESSION_PATCH_FIELDS);
  const out: {
    status?: SessionStatus;
    context?: Session['context'];
    agent?: string | null;
    ttl_seconds?: number;
  } = {};
  if (patch.status !== undefined) out.status = oneOf(patch.status, SESSION_STATUSES, `${path}.status`);
  if (patch.context !== undefined) out.context = jsonObject(patch.context, 'session.context');
  if (patch.agent !== undefined) out.agent = patch.agent === null ? null : name(patch.agent, `${path}.agent`);
  if (patch.ttl_seconds !== undefined)
    out.ttl_seconds = positiveInt(patch.ttl_seconds, `${path}.ttl_seconds`);
  return out;
}

/** Applies a checked patch when `expected` is the current version: the version goes up, the TTL is renewed. */
export function applySessionPatch(
  c: Ctx,
  scope: ReadScope,
  id: string,
  expected: number,
  patch: CheckedSessionPatch,
): Session {
  const row = requireSession(c, scope, id);
  const current = row.rec;
  if (current.version !== expected) throw versionConflict(ADAPTER, 'session', id, expected, current.version);
  const next: Session = { ...current, version: current.version + 1, updated_at: isoAt(c.now) };
  if (patch.status !== undefined && patch.status !== current.status) {
    if (!SESSION_TRANSITIONS[current.status].includes(patch.status)) {
      fail(`session ${id}: cannot go from ${current.status} to ${patch.status}`);
    }
    next.status = patch.status;
    if (patch.status === 'ended') next.ended_at = isoAt(c.now);
  }
  if (patch.context !== undefined) next.context = patch.context;
  if (patch.agent !== undefined) next.agent = patch.agent;
  if (patch.ttl_seconds !== undefined) next.ttl_seconds = patch.ttl_seconds;
  return putSession(c, row, renewed(c, next));
}

export function updateSession(
  c: Ctx,
  scope: ReadScope,
  id: string,
  expected: number,
  patch: SessionPatch,
): Session {
  checkReadScope(scope);
  checkId(id, 'session', 'session id');
  positiveInt(expected, 'expected_version');
  const checked = checkSessionPatch(patch, 'patch');
  return copy(applySessionPatch(c, scope, id, expected, checked));
}

export function touchSession(c: Ctx, scope: ReadScope, id: string): Session | null {
  checkReadScope(scope);
  checkId(id, 'session', 'session id');
  const row = liveSession(c, scope, id);
  if (row === null) return null;
  return copy(putSession(c, row, renewed(c, row.rec)));
}

/** Status `ended` with a new version; an ended session is returned as it is. */
export function endSession(c: Ctx, scope: ReadScope, id: string): Session | null {
  checkReadScope(scope);
  checkId(id, 'session', 'session id');
  const row = liveSession(c, scope, id);
  if (row === null) return null;
  if (row.rec.status === 'ended') return copy(row.rec);
  const at = isoAt(c.now);
  const ended: Session = {
    ...row.rec,
    status: 'ended',
    ended_at: at,
    updated_at: at,
    version: row.rec.version + 1,
  };
  return copy(putSession(c, row, ended));
}

export function deleteSession(c: Ctx, scope: ReadScope, id: string): boolean {
  checkReadScope(scope);
  checkId(id, 'session', 'session id');
  if (liveSession(c, scope, id) === null) return false;
  c.tx.delete(c.t.sessions, id);
  c.tx.delete(c.t.messages, id);
  return true;
}

/** Removes up to `max` expired sessions with their messages. */
export function sweepExpired(c: Ctx, max: number): number {
  let removed = 0;
  for (const [id, row] of c.t.sessions) {
    if (removed >= max) break;
    if (!expired(row.rec, c.now)) continue;
    c.tx.delete(c.t.sessions, id);
    c.tx.delete(c.t.messages, id);
    removed++;
  }
  return removed;
}
