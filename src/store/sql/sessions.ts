/** Sessions: sliding TTL, optimistic versions, invisible (in every query) the moment they expire. */

import { versionConflict } from '../../core/errors.js';
import { newId } from '../../core/ids.js';
import type { JsonObject } from '../../core/json.js';
import { SESSION_STATUSES, SESSION_TRANSITIONS, type Session, type SessionStatus } from '../../core/model.js';
import { SESSION_FIELDS, SESSION_PATCH_FIELDS, SESSION_QUERY_FIELDS } from '../shared/known-fields.js';
import type { NewSession, Page, ReadScope, Scope, SessionPatch, SessionQuery } from '../types.js';
import { conflict, isoAfter, notFound, nowIso, type SqlContext, scopeCheck, scopeWhere } from './context.js';
import type { SqlDialect, SqlExecutor, SqlParam } from './executor.js';
import { LIMIT_PARAM } from './executor.js';
import { ordCursor, pageLimit, toPage } from './paging.js';
import { SESSION_COLUMNS, toJson, toSession } from './rows.js';

export interface CheckedNewSession {
  readonly id: string | null;
  readonly agent: string | null;
  readonly context: JsonObject;
  readonly ttl_seconds: number;
  readonly status: SessionStatus;
}

export function checkNewSession(ctx: SqlContext, input: NewSession): CheckedNewSession {
  const { v } = ctx;
  v.record(input, 'session', SESSION_FIELDS);
  const status =
    input.status === undefined ? 'active' : v.oneOf(input.status, SESSION_STATUSES, 'session.status');
  if (status === 'expired') v.fail('session.status cannot be expired: expiry is set by time');
  return {
    id: v.optionalId(input.id, 'session', 'session.id'),
    agent: input.agent === undefined || input.agent === null ? null : v.name(input.agent, 'session.agent'),
    context: input.context === undefined ? {} : v.jsonObject(input.context, 'session.context'),
    ttl_seconds:
      input.ttl_seconds === undefined
        ? ctx.defaultSessionTtlSeconds
        : v.positiveInt(input.ttl_seconds, 'session.ttl_seconds'),
    status,
  };
}

export interface CheckedSessionPatch {
  readonly status?: SessionStatus;
  readonly context?: JsonObject;
  readonly agent?: string | null;
  readonly ttl_seconds?: number;
}

export function checkSessionPatch(ctx: SqlContext, patch: SessionPatch, path: string): CheckedSessionPatch {
  const { v } = ctx;
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

function values(session: Session): SqlParam[] {
  return [
    session.id,
    session.tenant_id,
    session.user_id,
    session.agent,
    session.status,
    toJson(session.context),
    session.version,
    session.ttl_seconds,
    session.created_at,
    session.updated_at,
    session.last_activity_at,
    session.expires_at,
    session.ended_at,
  ];
}

export async function insertSession(
  ctx: SqlContext,
  tx: SqlExecutor,
  scope: Scope,
  input: CheckedNewSession,
) {
  const now = nowIso(ctx);
  const session: Session = {
    id: input.id ?? newId('session', ctx.random),
    tenant_id: scope.tenant_id,
    user_id: scope.user_id,
    agent: input.agent,
    status: input.status,
    context: input.context,
    version: 1,
    ttl_seconds: input.ttl_seconds,
    created_at: now,
    updated_at: now,
    last_activity_at: now,
    expires_at: isoAfter(ctx, input.ttl_seconds * 1000),
    ended_at: input.status === 'ended' ? now : null,
  };
  if (input.id !== null && (await tx.get('SELECT 1 AS one FROM sessions WHERE id = ?', [input.id]))) {
    throw conflict(ctx, 'session', input.id);
  }
  await tx.run(
    `INSERT INTO sessions (${SESSION_COLUMNS}, message_count) VALUES (${'?, '.repeat(13)}0)`,
    values(session),
  );
  return session;
}

/** A visible (in scope, unexpired) session, or null. */
export async function selectSession(ctx: SqlContext, q: SqlExecutor, scope: ReadScope, id: string) {
  const where = scopeCheck(scope);
  const row = await q.get(
    `SELECT ${SESSION_COLUMNS} FROM sessions WHERE id = ? AND ${where.sql} AND expires_at > ?`,
    [id, ...where.params, nowIso(ctx)],
  );
  return row === undefined ? null : toSession(row);
}

export async function listSessionRows(
  ctx: SqlContext,
  q: SqlExecutor,
  scope: ReadScope,
  query: SessionQuery,
) {
  const { v } = ctx;
  v.record(query, 'query', SESSION_QUERY_FIELDS);
  const status = query.status === undefined ? undefined : v.oneOf(query.status, SESSION_STATUSES, 'status');
  const limit = pageLimit(ctx, query);
  const list = { name: 'sessions', scope };
  const cursor = await ordCursor(ctx, q, list, query.cursor);
  const where = scopeWhere(scope);
  const conditions = [where.sql, 'expires_at > ?'];
  const params: SqlParam[] = [...where.params, nowIso(ctx)];
  if (status !== undefined) {
    conditions.push('status = ?');
    params.push(status);
  }
  if (cursor !== null) {
    conditions.push('ord < ?');
    params.push(cursor);
  }
  const rows = await q.all(
    `SELECT ord, ${SESSION_COLUMNS} FROM sessions WHERE ${conditions.join(' AND ')} ORDER BY ord DESC ${LIMIT_PARAM}`,
    [...params, limit + 1],
  );
  return (await toPage(ctx, q, list, rows, limit, toSession)) as Page<Session>;
}

/** Writes a new state of a session when the stored version is still `expected` (one conditional UPDATE). */
async function writeSession(
  ctx: SqlContext,
  tx: SqlExecutor,
  next: Session,
  expected: number,
): Promise<Session> {
  const changed = await tx.run(
    `UPDATE sessions SET agent = ?, status = ?, context = ?, version = ?, ttl_seconds = ?, updated_at = ?,
      last_activity_at = ?, expires_at = ?, ended_at = ? WHERE id = ? AND tenant_id || '' = ? AND user_id || '' = ?
      AND version = ?`,
    [
      next.agent,
      next.status,
      toJson(next.context),
      next.version,
      next.ttl_seconds,
      next.updated_at,
      next.last_activity_at,
      next.expires_at,
      next.ended_at,
      next.id,
      next.tenant_id,
      next.user_id,
      expected,
    ],
  );
  if (changed === 0) {
    const row = await tx.get('SELECT version FROM sessions WHERE id = ?', [next.id]);
    throw versionConflict(
      ctx.adapter,
      'session',
      next.id,
      expected,
      row === undefined ? null : Number(row.version),
    );
  }
  return next;
}

/** Applies a checked patch when `expected` is the current version: the version goes up, the TTL is renewed. */
export async function applySessionPatch(
  ctx: SqlContext,
  tx: SqlExecutor,
  scope: ReadScope,
  id: string,
  expected: number,
  patch: CheckedSessionPatch,
): Promise<Session> {
  const current = await selectSession(ctx, tx, scope, id);
  if (current === null) throw notFound(ctx, 'session', id);
  if (current.version !== expected)
    throw versionConflict(ctx.adapter, 'session', id, expected, current.version);
  const now = nowIso(ctx);
  const next: Session = { ...current, version: current.version + 1, updated_at: now };
  if (patch.status !== undefined && patch.status !== current.status) {
    if (!SESSION_TRANSITIONS[current.status].includes(patch.status)) {
      ctx.v.fail(`session ${id}: cannot go from ${current.status} to ${patch.status}`);
    }
    next.status = patch.status;
    if (patch.status === 'ended') next.ended_at = now;
  }
  if (patch.context !== undefined) next.context = patch.context;
  if (patch.agent !== undefined) next.agent = patch.agent;
  if (patch.ttl_seconds !== undefined) next.ttl_seconds = patch.ttl_seconds;
  next.last_activity_at = now;
  next.expires_at = isoAfter(ctx, next.ttl_seconds * 1000);
  return writeSession(ctx, tx, next, expected);
}

/** Renews the sliding TTL of a visible session (no version change); returns it, or null. */
export async function touchSessionRow(ctx: SqlContext, tx: SqlExecutor, scope: ReadScope, id: string) {
  const current = await selectSession(ctx, tx, scope, id);
  if (current === null) return null;
  const now = nowIso(ctx);
  const expires_at = isoAfter(ctx, current.ttl_seconds * 1000);
  await tx.run('UPDATE sessions SET last_activity_at = ?, expires_at = ? WHERE id = ?', [
    now,
    expires_at,
    id,
  ]);
  return { ...current, last_activity_at: now, expires_at };
}

/** Status `ended` with a new version; an ended session is returned as it is. */
export async function endSessionRow(ctx: SqlContext, tx: SqlExecutor, scope: ReadScope, id: string) {
  const current = await selectSession(ctx, tx, scope, id);
  if (current === null) return null;
  if (current.status === 'ended') return current;
  const now = nowIso(ctx);
  const ended: Session = {
    ...current,
    status: 'ended',
    ended_at: now,
    updated_at: now,
    version: current.version + 1,
  };
  return writeSession(ctx, tx, ended, current.version);
}

export async function deleteSessionRows(ctx: SqlContext, tx: SqlExecutor, scope: ReadScope, id: string) {
  if ((await selectSession(ctx, tx, scope, id)) === null) return false;
  await tx.run('DELETE FROM messages WHERE tenant_id = ? AND session_id = ?', [scope.tenant_id, id]);
  await tx.run('DELETE FROM sessions WHERE id = ?', [id]);
  return true;
}

/** What one batch of the session sweep deleted. */
export interface SweptSessions {
  readonly sessions: number;
  readonly messages: number;
}

/**
 * Deletes up to `limit` expired sessions (the longest expired first) with their messages, set by set:
 * claims their ords (PostgreSQL: FOR UPDATE SKIP LOCKED, so sweepers running at once take disjoint rows and
 * none waits for another), then deletes the messages of those sessions with one statement and the
 * sessions with another. Every statement goes through an index: sessions_by_expiry, the primary key of
 * sessions (ord), and the primary key of messages (tenant_id, session_id, seq).
 */
export async function sweepSessions(
  ctx: SqlContext,
  tx: SqlExecutor,
  limit: number,
  dialect: SqlDialect,
): Promise<SweptSessions> {
  const claimed = await tx.all(
    `SELECT ord FROM sessions WHERE expires_at <= ? ORDER BY expires_at ${LIMIT_PARAM}${dialect.claimRows}`,
    [nowIso(ctx), limit],
  );
  if (claimed.length === 0) return { sessions: 0, messages: 0 };
  const ords = JSON.stringify(claimed.map((row) => Number(row.ord)));
  const messages = await tx.run(
    `DELETE FROM messages WHERE (tenant_id, session_id) IN
      (SELECT tenant_id, id FROM sessions WHERE ${dialect.inIntegers('ord')})`,
    [ords],
  );
  const sessions = await tx.run(`DELETE FROM sessions WHERE ${dialect.inIntegers('ord')}`, [ords]);
  return { sessions, messages };
}

/** The tables of what expires besides sessions: memory items (with a TTL), leases, request keys. */
export const EXPIRING_TABLES = ['memory', 'leases', 'request_keys'] as const;
export type ExpiringTable = (typeof EXPIRING_TABLES)[number];

/**
 * Deletes up to `limit` expired rows of one of memory, leases and request keys (not counted by the sweep,
 * which counts sessions) with one statement: found through the table's expiry index, deleted by where they
 * are stored, claimed like sessions on PostgreSQL.
 */
export async function sweepOthers(
  ctx: SqlContext,
  tx: SqlExecutor,
  table: ExpiringTable,
  limit: number,
  dialect: SqlDialect,
): Promise<number> {
  const row = dialect.rowId;
  return tx.run(
    `DELETE FROM ${table} WHERE ${row} IN
      (SELECT ${row} FROM ${table} WHERE expires_at <= ? ORDER BY expires_at ${LIMIT_PARAM}${dialect.claimRows})`,
    [nowIso(ctx), limit],
  );
}
