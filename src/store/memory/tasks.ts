/** Tasks: explicit state machines with versions; every change of state writes a TaskEvent. */

import { isoAt } from '../../core/clock.js';
import { AgentStateError, versionConflict } from '../../core/errors.js';
import { newId } from '../../core/ids.js';
import type { JsonObject } from '../../core/json.js';
import {
  canTransition,
  FINAL_TASK_STATES,
  OPEN_TASK_STATES,
  TASK_STATES,
  type Task,
  type TaskEvent,
  type TaskState,
} from '../../core/model.js';
import {
  SESSION_HEAD_FIELDS,
  TASK_FIELDS,
  TASK_PATCH_FIELDS,
  TASK_QUERY_FIELDS,
} from '../shared/known-fields.js';
import {
  MAX_PAGE_LIMIT,
  type NewTask,
  type Page,
  type ReadScope,
  type Scope,
  type SessionHeadOptions,
  type TaskPatch,
  type TaskQuery,
} from '../types.js';
import { type Ctx, copy, key, type Row } from './db.js';
import { newestFirst } from './paging.js';
import { notFound, requireOwnSession } from './sessions.js';
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
  text,
} from './validate.js';

export interface CheckedNewTask {
  readonly id: string | null;
  readonly session_id: string | null;
  readonly type: string;
  readonly state: TaskState;
  readonly slots: JsonObject;
  readonly status_line: string;
  readonly data: JsonObject;
}

export function checkNewTask(input: NewTask, path: string): CheckedNewTask {
  record(input, path, TASK_FIELDS);
  return {
    id: optionalId(input.id, 'task', `${path}.id`),
    session_id: optionalId(input.session_id, 'session', `${path}.session_id`),
    type: name(input.type, `${path}.type`),
    state: input.state === undefined ? 'INIT' : oneOf(input.state, TASK_STATES, `${path}.state`),
    slots: input.slots === undefined ? {} : jsonObject(input.slots, 'task.slots'),
    status_line: input.status_line === undefined ? '' : text(input.status_line, `${path}.status_line`),
    data: input.data === undefined ? {} : jsonObject(input.data, 'task.data'),
  };
}

function writeEvent(c: Ctx, task: Task, from: TaskState | null, cause: string): void {
  const event: TaskEvent = {
    id: newId('event', c.random),
    tenant_id: task.tenant_id,
    user_id: task.user_id,
    task_id: task.id,
    from_state: from,
    to_state: task.state,
    cause,
    task_version: task.version,
    at: isoAt(c.now),
  };
  c.tx.set(c.t.events, task.id, [...(c.t.events.get(task.id) ?? []), event]);
}

export function insertTask(c: Ctx, scope: Scope, input: CheckedNewTask): Task {
  const id = input.id ?? newId('task', c.random);
  if (c.t.tasks.has(id)) {
    throw new AgentStateError('conflict', `[${ADAPTER}] task ${id} already exists`, { details: { id } });
  }
  requireOwnSession(c, scope, input.session_id);
  const at = isoAt(c.now);
  const task: Task = {
    id,
    tenant_id: scope.tenant_id,
    user_id: scope.user_id,
    session_id: input.session_id,
    type: input.type,
    state: input.state,
    slots: input.slots,
    status_line: input.status_line,
    data: input.data,
    version: 1,
    created_at: at,
    updated_at: at,
    closed_at: FINAL_TASK_STATES.includes(input.state) ? at : null,
  };
  putTaskRow(c, id, { seq: c.nextSeq(), rec: task });
  writeEvent(c, task, null, 'created');
  return task;
}

export function createTask(c: Ctx, scope: Scope, input: NewTask): Task {
  checkScope(scope);
  return copy(insertTask(c, scope, checkNewTask(input, 'task')));
}

export function liveTask(c: Ctx, scope: ReadScope, id: string): Row<Task> | null {
  const row = c.t.tasks.get(id);
  return row !== undefined && inScope(scope, row.rec) ? row : null;
}

export function getTask(c: Ctx, scope: ReadScope, id: string): Task | null {
  checkReadScope(scope);
  checkId(id, 'task', 'task id');
  const row = liveTask(c, scope, id);
  return row === null ? null : copy(row.rec);
}

/** The map of `owner` in `index`, made (in the transaction) when missing. */
function userRows(c: Ctx, index: Map<string, Map<string, Row<Task>>>, owner: string): Map<string, Row<Task>> {
  let rows = index.get(owner);
  if (rows === undefined) {
    rows = new Map();
    c.tx.set(index, owner, rows);
  }
  return rows;
}

/** Writes a task's row: in all tasks, in its user's, and in its user's open ones while it is open. */
function putTaskRow(c: Ctx, id: string, row: Row<Task>): void {
  c.tx.set(c.t.tasks, id, row);
  const owner = key(row.rec.tenant_id, row.rec.user_id);
  c.tx.set(userRows(c, c.t.tasksByUser, owner), id, row);
  if (OPEN_TASK_STATES.includes(row.rec.state)) c.tx.set(userRows(c, c.t.openTasksByUser, owner), id, row);
  else {
    const open = c.t.openTasksByUser.get(owner);
    if (open !== undefined) c.tx.delete(open, id);
  }
}

/** Removes a task's row from all tasks, from its user's and from its user's open ones. */
export function deleteTaskRow(c: Ctx, id: string, task: Task): void {
  c.tx.delete(c.t.tasks, id);
  const owner = key(task.tenant_id, task.user_id);
  for (const index of [c.t.tasksByUser, c.t.openTasksByUser]) {
    const rows = index.get(owner);
    if (rows !== undefined) c.tx.delete(rows, id);
  }
}

export function listTasks(c: Ctx, scope: ReadScope, query: TaskQuery = {}): Page<Task> {
  checkReadScope(scope);
  record(query, 'query', TASK_QUERY_FIELDS);
  const session =
    query.session_id === undefined ? undefined : checkId(query.session_id, 'session', 'session_id');
  const states =
    query.state === undefined
      ? undefined
      : (Array.isArray(query.state) ? query.state : [query.state]).map((s: unknown) =>
          oneOf(s, TASK_STATES, 'state'),
        );
  const type = query.type === undefined ? undefined : name(query.type, 'type');
  // A user's tasks from the user's rows; a tenant's (a tenant key) from all of them.
  const owner = scope.user_id === undefined ? null : key(scope.tenant_id, scope.user_id);
  const onlyOpen = states?.every((state) => OPEN_TASK_STATES.includes(state)) === true;
  const candidates =
    owner === null
      ? c.t.tasks.values()
      : ((onlyOpen ? c.t.openTasksByUser : c.t.tasksByUser).get(owner)?.values() ?? []);
  const rows = [...candidates].filter(
    ({ rec }) =>
      inScope(scope, rec) &&
      (session === undefined || rec.session_id === session) &&
      (states === undefined || states.includes(rec.state)) &&
      (type === undefined || rec.type === type),
  );
  return newestFirst({ key: c.t.cursorKey, name: 'tasks', scope }, rows, query);
}

export type CheckedTaskPatch = Omit<TaskPatch, 'cause'> & { readonly cause: string };

export function checkTaskPatch(patch: TaskPatch, path: string): CheckedTaskPatch {
  record(patch, path, TASK_PATCH_FIELDS);
  const out: { -readonly [K in keyof CheckedTaskPatch]?: CheckedTaskPatch[K] } = {
    cause: patch.cause === undefined ? 'update' : name(patch.cause, `${path}.cause`),
  };
  if (patch.state !== undefined) out.state = oneOf(patch.state, TASK_STATES, `${path}.state`);
  if (patch.slots !== undefined) out.slots = jsonObject(patch.slots, 'task.slots');
  if (patch.data !== undefined) out.data = jsonObject(patch.data, 'task.data');
  if (patch.status_line !== undefined) out.status_line = text(patch.status_line, `${path}.status_line`);
  if (patch.session_id !== undefined)
    out.session_id = optionalId(patch.session_id, 'session', `${path}.session_id`);
  return out as CheckedTaskPatch;
}

export function applyTaskPatch(
  c: Ctx,
  scope: ReadScope,
  id: string,
  expected: number,
  patch: CheckedTaskPatch,
): Task {
  const row = liveTask(c, scope, id);
  if (row === null) throw notFound('task', id);
  const current = row.rec;
  if (current.version !== expected) throw versionConflict(ADAPTER, 'task', id, expected, current.version);
  const changes = patch.state !== undefined && patch.state !== current.state;
  if (changes && !canTransition(current.state, patch.state as TaskState)) {
    fail(`task ${id}: cannot go from ${current.state} to ${patch.state}`, {
      from: current.state,
      to: patch.state,
    });
  }
  // A new session must be one of the task owner's; keeping the one it has (maybe expired since) is no change.
  if (patch.session_id !== undefined && patch.session_id !== current.session_id) {
    requireOwnSession(c, { tenant_id: current.tenant_id, user_id: current.user_id }, patch.session_id);
  }
  const at = isoAt(c.now);
  const next: Task = {
    ...current,
    version: current.version + 1,
    updated_at: at,
    ...(patch.slots === undefined ? {} : { slots: patch.slots }),
    ...(patch.data === undefined ? {} : { data: patch.data }),
    ...(patch.status_line === undefined ? {} : { status_line: patch.status_line }),
    ...(patch.session_id === undefined ? {} : { session_id: patch.session_id }),
  };
  if (changes) {
    next.state = patch.state as TaskState;
    next.closed_at = FINAL_TASK_STATES.includes(next.state) ? at : null;
  }
  putTaskRow(c, id, { seq: row.seq, rec: next });
  if (changes) writeEvent(c, next, current.state, patch.cause);
  return next;
}

export function updateTask(c: Ctx, scope: ReadScope, id: string, expected: number, patch: TaskPatch): Task {
  checkReadScope(scope);
  checkId(id, 'task', 'task id');
  positiveInt(expected, 'expected_version');
  return copy(applyTaskPatch(c, scope, id, expected, checkTaskPatch(patch, 'patch')));
}

export function listTaskEvents(c: Ctx, scope: ReadScope, task_id: string): TaskEvent[] {
  checkReadScope(scope);
  checkId(task_id, 'task', 'task id');
  if (liveTask(c, scope, task_id) === null) return [];
  return copy([...(c.t.events.get(task_id) ?? [])]);
}

/** `options` of getSessionHead checked: how many open tasks to read with the head (null: none). */
export function checkSessionHeadOptions(options: SessionHeadOptions): number | null {
  record(options, 'options', SESSION_HEAD_FIELDS);
  if (options.open_tasks === undefined) return null;
  const n = positiveInt(options.open_tasks, 'options.open_tasks');
  if (n > MAX_PAGE_LIMIT) fail(`options.open_tasks must be at most ${MAX_PAGE_LIMIT}`);
  return n;
}
