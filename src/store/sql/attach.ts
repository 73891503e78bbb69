/**
 * A record that names a session (a task, an action, a checkpoint) may only name one its owner can read:
 * a live session of the same tenant and user (ended or not). Anything else is `not_found` naming the
 * session, as a read of it in that scope would find nothing, and nothing is written. The check is one
 * indexed read inside the write's own transaction or statement; on PostgreSQL it takes a KEY SHARE lock of
 * the session row, so the session cannot be deleted (and its id taken by another user) before the write
 * commits.
 */
import type { Scope } from '../types.js';
import { notFound, nowIso, type SqlContext, scopeCheck } from './context.js';
import type { SqlExecutor, SqlParam } from './executor.js';

/** True when `session_id` must be checked (one is named, and the sessions live in this database). */
export function checksSession(ctx: SqlContext, session_id: string | null | undefined): session_id is string {
  return session_id !== null && session_id !== undefined && ctx.sessionsElsewhere !== true;
}

/**
 * The SELECT of the session's row when it is the owner's and live (no row otherwise), for an EXISTS or a
 * guard. `lockedHere`: the session a data-modifying part of the same statement updates (PostgreSQL's
 * one-statement turn): that UPDATE locks its row already, and a KEY SHARE lock of a row the same command
 * updates finds no row, so that session is read without one.
 */
export function ownSessionSelect(
  ctx: SqlContext,
  scope: Scope,
  session_id: string,
  lockedHere: string | null = null,
): { sql: string; params: SqlParam[] } {
  const lock = session_id === lockedHere ? '' : (ctx.sessionLock ?? '');
  const check = scopeCheck(scope);
  return {
    sql: `SELECT 1 AS one FROM sessions WHERE id = ? AND ${check.sql} AND expires_at > ?${lock}`,
    params: [session_id, ...check.params, nowIso(ctx)],
  };
}

/** Throws `not_found` unless `session_id` (when one is named) is a live session of the owner's. */
export async function requireOwnSession(
  ctx: SqlContext,
  tx: SqlExecutor,
  scope: Scope,
  session_id: string | null | undefined,
): Promise<void> {
  if (!checksSession(ctx, session_id)) return;
  const select = ownSessionSelect(ctx, scope, session_id);
  if ((await tx.get(select.sql, select.params)) === undefined) throw notFound(ctx, 'session', session_id);
}
