/** Actions: recorded before they run, unique per (tenant, user, idempotency key), PENDING -> a final status. */

import { newId } from '../../core/ids.js';
import type { JsonValue } from '../../core/json.js';
import {
  ACTION_STATUSES,
  ACTION_TRANSITIONS,
  type Action,
  type ActionError,
  type ActionStatus,
} from '../../core/model.js';
import {
  ACTION_ERROR_FIELDS,
  ACTION_FIELDS,
  ACTION_QUERY_FIELDS,
  COMPLETION_FIELDS,
} from '../shared/known-fields.js';
import type { ActionCompletion, ActionQuery, NewAction, Page, ReadScope, Scope } from '../types.js';
import { checksSession, ownSessionSelect, requireOwnSession } from './attach.js';
import { conflict, notFound, nowIso, type SqlContext, scopeCheck, scopeWhere } from './context.js';
import type { SqlExecutor, SqlParam } from './executor.js';
import { LIMIT_PARAM } from './executor.js';
import { ordCursor, pageLimit, toPage } from './paging.js';
import { ACTION_COLUMNS, toAction, toJson } from './rows.js';
import { selectTask } from './tasks.js';

export interface CheckedNewAction {
  readonly id: string | null;
  readonly task_id: string;
  readonly session_id: string | null;
  readonly type: string;
  readonly tool: string | null;
  readonly params: JsonValue;
  readonly idempotency_key: string;
}

export function checkNewAction(ctx: SqlContext, input: NewAction, path: string): CheckedNewAction {
  const { v } = ctx;
  v.record(input, path, ACTION_FIELDS);
  if (!('params' in input)) v.fail(`${path}.params is required (use null for none)`);
  return {
    id: v.optionalId(input.id, 'action', `${path}.id`),
    task_id: v.id(input.task_id, 'task', `${path}.task_id`),
    session_id: v.optionalId(input.session_id, 'session', `${path}.session_id`),
    type: v.name(input.type, `${path}.type`),
    tool: input.tool === undefined || input.tool === null ? null : v.name(input.tool, `${path}.tool`),
    params: v.json(input.params, 'action.params'),
    idempotency_key: v.name(input.idempotency_key, `${path}.idempotency_key`),
  };
}

export interface CheckedCompletion {
  readonly status: 'SUCCESS' | 'FAILED';
  readonly result: JsonValue;
  readonly error: ActionError | null;
}

export function checkCompletion(
  ctx: SqlContext,
  input: ActionCompletion,
  path: string,
  known: readonly string[] = COMPLETION_FIELDS,
): CheckedCompletion {
  const { v } = ctx;
  v.record(input, path, known);
  const status = v.oneOf(input.status, ['SUCCESS', 'FAILED'] as const, `${path}.status`);
  const result = input.result === undefined ? null : v.json(input.result, 'action.result');
  let error: ActionError | null = null;
  if (input.error !== undefined && input.error !== null) {
    v.record(input.error, 'action.error', ACTION_ERROR_FIELDS);
    error = {
      code: v.name(input.error.code, 'action.error.code'),
      message: v.name(input.error.message, 'action.error.message'),
    };
    if (input.error.details !== undefined)
      error.details = v.json(input.error.details, 'action.error.details');
  }
  return { status, result, error };
}

export async function selectActionByKey(q: SqlExecutor, scope: Scope, key: string): Promise<Action | null> {
  const row = await q.get(
    `SELECT ${ACTION_COLUMNS} FROM actions WHERE tenant_id = ? AND user_id = ? AND idempotency_key = ?`,
    [scope.tenant_id, scope.user_id, key],
  );
  return row === undefined ? null : toAction(row);
}

export async function selectAction(q: SqlExecutor, scope: ReadScope, id: string): Promise<Action | null> {
  const where = scopeCheck(scope);
  const row = await q.get(`SELECT ${ACTION_COLUMNS} FROM actions WHERE id = ? AND ${where.sql}`, [
    id,
    ...where.params,
  ]);
  return row === undefined ? null : toAction(row);
}

/**
 * The existing action of the key, or a new PENDING one (the task must exist in scope). The insert is
 * ON CONFLICT DO NOTHING, so two writers racing on one key both end with the one stored action.
 *
 * The common case (a new key, the task there, the id free) is one statement: the insert checks the task
 * and the id itself. When it inserts nothing, the reads below say why, in the order they always did.
 */
/**
 * A new PENDING action's record, and the statement that inserts it unless its task is missing, its id is
 * taken or its key exists (then it inserts nothing).
 */
export function newActionInsert(
  ctx: SqlContext,
  scope: Scope,
  input: CheckedNewAction,
  now: string,
  /** The session the same statement updates (see ownSessionSelect). */
  lockedHere: string | null = null,
) {
  const action: Action = {
    id: input.id ?? newId('action', ctx.random),
    tenant_id: scope.tenant_id,
    user_id: scope.user_id,
    task_id: input.task_id,
    session_id: input.session_id,
    type: input.type,
    tool: input.tool,
    params: input.params,
    idempotency_key: input.idempotency_key,
    status: 'PENDING',
    result: null,
    error: null,
    attempts: 1,
    note: null,
    created_at: now,
    updated_at: now,
    completed_at: null,
  };
  const row: SqlParam[] = [
    action.id,
    action.tenant_id,
    action.user_id,
    action.task_id,
    action.session_id,
    action.type,
    action.tool,
    toJson(action.params),
    action.idempotency_key,
    action.status,
    null,
    null,
    action.attempts,
    null,
    action.created_at,
    action.updated_at,
    null,
  ];
  const values = `${Array(12).fill('?').join(', ')}, CAST(? AS INTEGER), ?, ?, ?, ?`;
  // The session it names (if any) must be a live one of the user's (attach.ts).
  const session = checksSession(ctx, input.session_id)
    ? ownSessionSelect(ctx, scope, input.session_id, lockedHere)
    : null;
  return {
    action,
    row,
    sql: `INSERT INTO actions (${ACTION_COLUMNS}) SELECT ${values}
      WHERE EXISTS (SELECT 1 FROM tasks WHERE id = ? AND tenant_id || '' = ? AND user_id || '' = ?)
        AND NOT EXISTS (SELECT 1 FROM actions WHERE id = ?)${session === null ? '' : ` AND EXISTS (${session.sql})`}
      ON CONFLICT (tenant_id, user_id, idempotency_key) DO NOTHING`,
    params: [...row, input.task_id, scope.tenant_id, scope.user_id, action.id, ...(session?.params ?? [])],
  };
}

export async function begin(ctx: SqlContext, tx: SqlExecutor, scope: Scope, input: CheckedNewAction) {
  const { action, row, sql, params } = newActionInsert(ctx, scope, input, nowIso(ctx));
  const checked = await tx.run(sql, params);
  if (checked === 1) return { action, created: true };
  const existing = await selectActionByKey(tx, scope, input.idempotency_key);
  if (existing !== null) return { action: existing, created: false };
  if ((await selectTask(tx, scope, input.task_id)) === null) throw notFound(ctx, 'task', input.task_id);
  await requireOwnSession(ctx, tx, scope, input.session_id);
  if (input.id !== null && (await tx.get('SELECT 1 AS one FROM actions WHERE id = ?', [input.id]))) {
    throw conflict(ctx, 'action', input.id);
  }
  const inserted = await tx.run(
    `INSERT INTO actions (${ACTION_COLUMNS}) VALUES (${Array(17).fill('?').join(', ')})
      ON CONFLICT (tenant_id, user_id, idempotency_key) DO NOTHING`,
    row,
  );
  if (inserted === 1) return { action, created: true };
  const winner = await selectActionByKey(tx, scope, input.idempotency_key);
  if (winner === null) throw conflict(ctx, 'action', action.id);
  return { action: winner, created: false };
}

/** The fields of an action a transition may change. */
export interface ActionChange {
  readonly result?: JsonValue;
  readonly error?: ActionError | null;
  readonly note?: string | null;
  readonly attempts?: number;
}

/** Moves an action to `to` when ACTION_TRANSITIONS allows it from one of `from` (to === current: an attempt). */
export async function transition(
  ctx: SqlContext,
  tx: SqlExecutor,
  scope: ReadScope,
  id: string,
  to: ActionStatus,
  from: readonly ActionStatus[],
  change: ActionChange,
): Promise<Action> {
  const current = await selectAction(tx, scope, id);
  if (current === null) throw notFound(ctx, 'action', id);
  if (change.attempts !== undefined) {
    if (current.status !== 'PENDING') {
      ctx.v.fail(`action ${id}: only a PENDING action can be attempted again, it is ${current.status}`);
    }
  } else if (!from.includes(current.status) || !ACTION_TRANSITIONS[current.status].includes(to)) {
    ctx.v.fail(`action ${id}: cannot go from ${current.status} to ${to}`, { from: current.status, to });
  }
  const now = nowIso(ctx);
  const next: Action = { ...current, ...change, status: to, updated_at: now };
  if (change.attempts !== undefined) next.attempts = current.attempts + 1;
  if (to === 'SUCCESS' || to === 'FAILED') next.completed_at = now;
  const changed = await tx.run(
    `UPDATE actions SET status = ?, result = ?, error = ?, note = ?, attempts = ?, updated_at = ?, completed_at = ?
      WHERE id = ? AND tenant_id || '' = ? AND status = ? AND attempts = ?`,
    [
      next.status,
      next.result === null ? null : toJson(next.result),
      next.error === null ? null : toJson(next.error),
      next.note,
      next.attempts,
      next.updated_at,
      next.completed_at,
      id,
      current.tenant_id,
      current.status,
      current.attempts,
    ],
  );
  // Another writer changed it between our read and write (PostgreSQL): decide again on what it is now.
  if (changed === 0) return transition(ctx, tx, scope, id, to, from, change);
  return next;
}

export async function listActionRows(ctx: SqlContext, q: SqlExecutor, scope: ReadScope, query: ActionQuery) {
  const { v } = ctx;
  v.record(query, 'query', ACTION_QUERY_FIELDS);
  const task = query.task_id === undefined ? undefined : v.id(query.task_id, 'task', 'task_id');
  const status = query.status === undefined ? undefined : v.oneOf(query.status, ACTION_STATUSES, 'status');
  const limit = pageLimit(ctx, query);
  const list = { name: 'actions', scope };
  const cursor = await ordCursor(ctx, q, list, query.cursor);
  const where = scopeWhere(scope);
  const conditions = [where.sql];
  const params: SqlParam[] = [...where.params];
  if (task !== undefined) {
    conditions.push('task_id = ?');
    params.push(task);
  }
  if (status !== undefined) {
    conditions.push('status = ?');
    params.push(status);
  }
  if (cursor !== null) {
    conditions.push('ord < ?');
    params.push(cursor);
  }
  const rows = await q.all(
    `SELECT ord, ${ACTION_COLUMNS} FROM actions WHERE ${conditions.join(' AND ')} ORDER BY ord DESC ${LIMIT_PARAM}`,
    [...params, limit + 1],
  );
  return (await toPage(ctx, q, list, rows, limit, toAction)) as Page<Action>;
}
