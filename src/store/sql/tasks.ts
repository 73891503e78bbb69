/** Tasks: explicit state machines with versions; every change of state writes a TaskEvent. */

import { versionConflict } from '../../core/errors.js';
import { newId } from '../../core/ids.js';
import type { JsonObject } from '../../core/json.js';
import {
  canTransition,
  FINAL_TASK_STATES,
  OPEN_TASK_STATES,
  TASK_STATES,
  type Task,
  type TaskState,
} from '../../core/model.js';
import { TASK_FIELDS, TASK_PATCH_FIELDS, TASK_QUERY_FIELDS } from '../shared/known-fields.js';
import type { NewTask, Page, ReadScope, Scope, TaskPatch, TaskQuery } from '../types.js';
import { checksSession, requireOwnSession } from './attach.js';
import { conflict, notFound, nowIso, type SqlContext, scopeCheck, scopeWhere } from './context.js';
import type { SqlExecutor, SqlParam } from './executor.js';
import { LIMIT_PARAM } from './executor.js';
import { ordCursor, pageLimit, toPage } from './paging.js';
import { EVENT_COLUMNS, TASK_COLUMNS, toJson, toTask, toTaskEvent } from './rows.js';
import { OPEN_TASK_STATES_SQL } from './schema.js';

export interface CheckedNewTask {
  readonly id: string | null;
  readonly session_id: string | null;
  readonly type: string;
  readonly state: TaskState;
  readonly slots: JsonObject;
  readonly status_line: string;
  readonly data: JsonObject;
}

export function checkNewTask(ctx: SqlContext, input: NewTask, path: string): CheckedNewTask {
  const { v } = ctx;
  v.record(input, path, TASK_FIELDS);
  return {
    id: v.optionalId(input.id, 'task', `${path}.id`),
    session_id: v.optionalId(input.session_id, 'session', `${path}.session_id`),
    type: v.name(input.type, `${path}.type`),
    state: input.state === undefined ? 'INIT' : v.oneOf(input.state, TASK_STATES, `${path}.state`),
    slots: input.slots === undefined ? {} : v.jsonObject(input.slots, 'task.slots'),
    status_line: input.status_line === undefined ? '' : v.text(input.status_line, `${path}.status_line`),
    data: input.data === undefined ? {} : v.jsonObject(input.data, 'task.data'),
  };
}

export type CheckedTaskPatch = Omit<TaskPatch, 'cause'> & { readonly cause: string };

export function checkTaskPatch(ctx: SqlContext, patch: TaskPatch, path: string): CheckedTaskPatch {
  const { v } = ctx;
  v.record(patch, path, TASK_PATCH_FIELDS);
  const out: { -readonly [K in keyof CheckedTaskPatch]?: CheckedTaskPatch[K] } = {
    cause: patch.cause === undefined ? 'update' : v.name(patch.cause, `${path}.cause`),
  };
  if (patch.state !== undefined) out.state = v.oneOf(patch.state, TASK_STATES, `${path}.state`);
  if (patch.slots !== undefined) out.slots = v.jsonObject(patch.slots, 'task.slots');
  if (patch.data !== undefined) out.data = v.jsonObject(patch.data, 'task.data');
  if (patch.status_line !== undefined) out.status_line = v.text(patch.status_line, `${path}.status_line`);
  if (patch.session_id !== undefined) {
    out.session_id = v.optionalId(patch.session_id, 'session', `${path}.session_id`);
  }
  return out as CheckedTaskPatch;
}

const isFinal = (state: TaskState) => FINAL_TASK_STATES.includes(state);

/** The scope of a task's owner: the session a task names must be one of theirs. */
const ownerOf = (task: Task): Scope => ({ tenant_id: task.tenant_id, user_id: task.user_id });

async function writeEvent(
  ctx: SqlContext,
  tx: SqlExecutor,
  task: Task,
  from: TaskState | null,
  cause: string,
) {
  await tx.run(
    `INSERT INTO task_events (${EVENT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    eventParams(ctx, task, from, cause),
  );
}

/** A new task's record and the parameters of its row (TASK_COLUMNS order). */
export function newTaskRow(ctx: SqlContext, scope: Scope, input: CheckedNewTask, now: string) {
  const task: Task = {
    id: input.id ?? newId('task', ctx.random),
    tenant_id: scope.tenant_id,
    user_id: scope.user_id,
    session_id: input.session_id,
    type: input.type,
    state: input.state,
    slots: input.slots,
    status_line: input.status_line,
    data: input.data,
    version: 1,
    created_at: now,
    updated_at: now,
    closed_at: isFinal(input.state) ? now : null,
  };
  const params: SqlParam[] = [
    task.id,
    task.tenant_id,
    task.user_id,
    task.session_id,
    task.type,
    task.state,
    toJson(task.slots),
    task.status_line,
    toJson(task.data),
    task.version,
    task.created_at,
    task.updated_at,
    task.closed_at,
  ];
  return { task, params };
}

/** The parameters of a task's event row (EVENT_COLUMNS order). */
export function eventParams(ctx: SqlContext, task: Task, from: TaskState | null, cause: string): SqlParam[] {
  return [
    newId('event', ctx.random),
    task.tenant_id,
    task.user_id,
    task.id,
    from,
    task.state,
    cause,
    task.version,
    nowIso(ctx),
  ];
}

export async function insertTask(ctx: SqlContext, tx: SqlExecutor, scope: Scope, input: CheckedNewTask) {
  const { task, params } = newTaskRow(ctx, scope, input, nowIso(ctx));
  if (input.id !== null && (await tx.get('SELECT 1 AS one FROM tasks WHERE id = ?', [input.id]))) {
    throw conflict(ctx, 'task', input.id);
  }
  await requireOwnSession(ctx, tx, scope, input.session_id);
  await tx.run(`INSERT INTO tasks (${TASK_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, params);
  await writeEvent(ctx, tx, task, null, 'created');
  return task;
}

export async function selectTask(q: SqlExecutor, scope: ReadScope, id: string): Promise<Task | null> {
  const where = scopeCheck(scope);
  const row = await q.get(`SELECT ${TASK_COLUMNS} FROM tasks WHERE id = ? AND ${where.sql}`, [
    id,
    ...where.params,
  ]);
  return row === undefined ? null : toTask(row);
}

/**
 * `oneStatement` (PostgreSQL): the read of the current row, the checks of version and transition, and the
 * update are one statement (an UPDATE ... FROM the row locked FOR UPDATE, returning its old state), so a
 * patch costs one round trip; only a refused one reads the row again, to say why.
 */
export async function applyTaskPatch(
  ctx: SqlContext,
  tx: SqlExecutor,
  scope: ReadScope,
  id: string,
  expected: number,
  patch: CheckedTaskPatch,
  oneStatement = false,
): Promise<Task> {
  if (oneStatement) return applyTaskPatchInOneStatement(ctx, tx, scope, id, expected, patch);
  const current = await selectTask(tx, scope, id);
  if (current === null) throw notFound(ctx, 'task', id);
  if (current.version !== expected) throw versionConflict(ctx.adapter, 'task', id, expected, current.version);
  const changes = patch.state !== undefined && patch.state !== current.state;
  if (changes && !canTransition(current.state, patch.state as TaskState)) {
    ctx.v.fail(`task ${id}: cannot go from ${current.state} to ${patch.state}`, {
      from: current.state,
      to: patch.state,
    });
  }
  // A new session must be one of the task owner's; keeping the one it has (maybe expired since) is no change.
  if (patch.session_id !== undefined && patch.session_id !== current.session_id) {
    await requireOwnSession(ctx, tx, ownerOf(current), patch.session_id);
  }
  const now = nowIso(ctx);
  const next: Task = {
    ...current,
    version: current.version + 1,
    updated_at: now,
    ...(patch.slots === undefined ? {} : { slots: patch.slots }),
    ...(patch.data === undefined ? {} : { data: patch.data }),
    ...(patch.status_line === undefined ? {} : { status_line: patch.status_line }),
    ...(patch.session_id === undefined ? {} : { session_id: patch.session_id }),
  };
  if (changes) {
    next.state = patch.state as TaskState;
    next.closed_at = isFinal(next.state) ? now : null;
  }
  const changed = await tx.run(
    `UPDATE tasks SET state = ?, slots = ?, status_line = ?, data = ?, session_id = ?, version = ?, updated_at = ?,
      closed_at = ? WHERE id = ? AND tenant_id || '' = ? AND user_id || '' = ? AND version = ?`,
    [
      next.state,
      toJson(next.slots),
      next.status_line,
      toJson(next.data),
      next.session_id,
      next.version,
      next.updated_at,
      next.closed_at,
      id,
      current.tenant_id,
      current.user_id,
      expected,
    ],
  );
  if (changed === 0) {
    const row = await tx.get('SELECT version FROM tasks WHERE id = ?', [id]);
    throw versionConflict(ctx.adapter, 'task', id, expected, row === undefined ? null : Number(row.version));
  }
  if (changes) await writeEvent(ctx, tx, next, current.state, patch.cause);
  return next;
}

/**
 * The one-statement patch of a task (PostgreSQL): an UPDATE of the row read FOR UPDATE, checked against the
 * expected version and, for a move, the states it may come from; `returning` lists what it returns (the
 * old state is `o.old_state`). No row comes back when it is refused.
 */
export function taskPatchUpdate(
  ctx: SqlContext,
  scope: ReadScope,
  id: string,
  expected: number,
  patch: CheckedTaskPatch,
  now: string,
  returning: string,
  /** The session the same statement updates (see ownSessionSelect in attach.ts). */
  lockedHere: string | null = null,
): { sql: string; params: SqlParam[] } {
  const sets = ['version = t.version + 1', 'updated_at = ?'];
  const params: SqlParam[] = [now];
  if (patch.slots !== undefined) {
    sets.push('slots = ?');
    params.push(toJson(patch.slots));
  }
  if (patch.data !== undefined) {
    sets.push('data = ?');
    params.push(toJson(patch.data));
  }
  if (patch.status_line !== undefined) {
    sets.push('status_line = ?');
    params.push(patch.status_line);
  }
  if (patch.session_id !== undefined) {
    sets.push('session_id = ?');
    params.push(patch.session_id);
  }
  let allowed = '';
  const allowedFrom: TaskState[] = [];
  if (patch.state !== undefined) {
    const to = patch.state as TaskState;
    // Staying in its state changes nothing of closed_at; a change closes (or reopens) the task.
    sets.push('state = ?', 'closed_at = CASE WHEN t.state = ? THEN t.closed_at ELSE ? END');
    params.push(to, to, isFinal(to) ? now : null);
    allowedFrom.push(...TASK_STATES.filter((from) => from === to || canTransition(from, to)));
    allowed = ` AND t.state IN (${allowedFrom.map(() => '?').join(', ')})`;
  }
  // A new session (see attach.ts) must be a live one of the task's owner, unless it is the one it has.
  let attach = '';
  const attachParams: SqlParam[] = [];
  if (checksSession(ctx, patch.session_id)) {
    attach = ` AND (t.session_id = ? OR EXISTS (SELECT 1 FROM sessions AS s WHERE s.id = ?
      AND s.tenant_id = t.tenant_id AND s.user_id = t.user_id AND s.expires_at > ?${patch.session_id === lockedHere ? '' : (ctx.sessionLock ?? '')}))`;
    attachParams.push(patch.session_id, patch.session_id, now);
  }
  const where = scopeCheck(scope);
  return {
    sql: `UPDATE tasks AS t SET ${sets.join(', ')}
      FROM (SELECT id, state AS old_state FROM tasks WHERE id = ? AND ${where.sql} FOR UPDATE) AS o
      WHERE t.id = o.id AND t.version = ?${allowed}${attach}
      RETURNING ${returning}`,
    params: [...params, id, ...where.params, expected, ...allowedFrom, ...attachParams],
  };
}

async function applyTaskPatchInOneStatement(
  ctx: SqlContext,
  tx: SqlExecutor,
  scope: ReadScope,
  id: string,
  expected: number,
  patch: CheckedTaskPatch,
): Promise<Task> {
  const returning = `${TASK_COLUMNS.split(', ')
    .map((column) => `t.${column}`)
    .join(', ')}, o.old_state`;
  const update = taskPatchUpdate(ctx, scope, id, expected, patch, nowIso(ctx), returning);
  const row = await tx.get(update.sql, update.params);
  if (row === undefined) {
    // Refused: read the row to say why, in the order the two-statement path checks.
    const current = await selectTask(tx, scope, id);
    if (current === null) throw notFound(ctx, 'task', id);
    if (current.version !== expected)
      throw versionConflict(ctx.adapter, 'task', id, expected, current.version);
    if (patch.state !== undefined && !canTransition(current.state, patch.state as TaskState)) {
      ctx.v.fail(`task ${id}: cannot go from ${current.state} to ${patch.state}`, {
        from: current.state,
        to: patch.state,
      });
    }
    if (patch.session_id !== undefined && patch.session_id !== current.session_id) {
      await requireOwnSession(ctx, tx, ownerOf(current), patch.session_id);
    }
    throw versionConflict(ctx.adapter, 'task', id, expected, current.version);
  }
  const next = toTask(row);
  const from = String(row.old_state) as TaskState;
  if (patch.state !== undefined && patch.state !== from) await writeEvent(ctx, tx, next, from, patch.cause);
  return next;
}

export async function listTaskRows(ctx: SqlContext, q: SqlExecutor, scope: ReadScope, query: TaskQuery) {
  const { v } = ctx;
  v.record(query, 'query', TASK_QUERY_FIELDS);
  const session =
    query.session_id === undefined ? undefined : v.id(query.session_id, 'session', 'session_id');
  const states =
    query.state === undefined
      ? undefined
      : (Array.isArray(query.state) ? query.state : [query.state]).map((s: unknown) =>
          v.oneOf(s, TASK_STATES, 'state'),
        );
  const type = query.type === undefined ? undefined : v.name(query.type, 'type');
  const limit = pageLimit(ctx, query);
  const list = { name: 'tasks', scope };
  const cursor = await ordCursor(ctx, q, list, query.cursor);
  const where = scopeWhere(scope);
  const conditions = [where.sql];
  const params: SqlParam[] = [...where.params];
  if (session !== undefined) {
    conditions.push('session_id = ?');
    params.push(session);
  }
  if (type !== undefined) {
    conditions.push('type = ?');
    params.push(type);
  }
  if (states !== undefined) {
    if (states.length === 0) return { items: [], next_cursor: null };
    if (sameStates(states, OPEN_TASK_STATES)) conditions.push(OPEN_TASK_STATES_SQL);
    else {
      conditions.push(`state IN (${states.map(() => '?').join(', ')})`);
      params.push(...states);
    }
  }
  if (cursor !== null) {
    conditions.push('ord < ?');
    params.push(cursor);
  }
  const rows = await q.all(
    `SELECT ord, ${TASK_COLUMNS} FROM tasks WHERE ${conditions.join(' AND ')} ORDER BY ord DESC ${LIMIT_PARAM}`,
    [...params, limit + 1],
  );
  return (await toPage(ctx, q, list, rows, limit, toTask)) as Page<Task>;
}

/** Whether two lists of states name the same set (the open states asked in any order, or twice). */
function sameStates(a: readonly TaskState[], b: readonly TaskState[]): boolean {
  const set = new Set(a);
  return set.size === new Set(b).size && b.every((state) => set.has(state));
}

export async function selectTaskEvents(q: SqlExecutor, scope: ReadScope, task_id: string) {
  const where = scopeWhere(scope);
  const rows = await q.all(
    `SELECT ${EVENT_COLUMNS} FROM task_events WHERE task_id = ? AND ${where.sql} ORDER BY task_version`,
    [task_id, ...where.params],
  );
  return rows.map(toTaskEvent);
}
