/** Tasks: explicit state machines with versions; every version writes a TaskEvent (changes of state are shown). */
import { isoAt } from '../../core/clock.js';
import { versionConflict } from '../../core/errors.js';
import { newId } from '../../core/ids.js';
import type { JsonObject } from '../../core/json.js';
import {
  canTransition,
  FINAL_TASK_STATES,
  TASK_STATES,
  type Task,
  type TaskEvent,
  type TaskState,
} from '../../core/model.js';
import { TASK_FIELDS, TASK_PATCH_FIELDS, TASK_QUERY_FIELDS } from '../shared/known-fields.js';
import type { NewTask, Page, ReadScope, Scope, TaskPatch, TaskQuery } from '../types.js';
import { type CoreEnv, conflict, notFound, type Op, type WriteOp } from './context.js';
import type { StoredTaskEvent, TaskFilter } from './driver.js';
import { askPage, toPage } from './paging.js';
import { requireOwnSession } from './sessions.js';

export interface CheckedNewTask {
  readonly id: string | null;
  readonly session_id: string | null;
  readonly type: string;
  readonly state: TaskState;
  readonly slots: JsonObject;
  readonly status_line: string;
  readonly data: JsonObject;
}

export function checkNewTask(env: CoreEnv, input: NewTask, path: string): CheckedNewTask {
  const { v } = env;
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

export function checkTaskPatch(env: CoreEnv, patch: TaskPatch, path: string): CheckedTaskPatch {
  const { v } = env;
  v.record(patch, path, TASK_PATCH_FIELDS);
  const out: { -readonly [K in keyof CheckedTaskPatch]?: CheckedTaskPatch[K] } = {
    cause: patch.cause === undefined ? 'update' : v.name(patch.cause, `${path}.cause`),
  };
  if (patch.state !== undefined) out.state = v.oneOf(patch.state, TASK_STATES, `${path}.state`);
  if (patch.slots !== undefined) out.slots = v.jsonObject(patch.slots, 'task.slots');
  if (patch.data !== undefined) out.data = v.jsonObject(patch.data, 'task.data');
  if (patch.status_line !== undefined) out.status_line = v.text(patch.status_line, `${path}.status_line`);
  if (patch.session_id !== undefined)
    out.session_id = v.optionalId(patch.session_id, 'session', `${path}.session_id`);
  return out as CheckedTaskPatch;
}

export function checkTaskQuery(env: CoreEnv, query: TaskQuery): TaskFilter {
  const { v } = env;
  v.record(query, 'query', TASK_QUERY_FIELDS);
  const filter: { -readonly [K in keyof TaskFilter]: TaskFilter[K] } = {};
  if (query.session_id !== undefined) filter.session_id = v.id(query.session_id, 'session', 'session_id');
  if (query.state !== undefined)
    filter.states = (Array.isArray(query.state) ? query.state : [query.state]).map((s: unknown) =>
      v.oneOf(s, TASK_STATES, 'state'),
    );
  if (query.type !== undefined) filter.type = v.name(query.type, 'type');
  return filter;
}

const isFinal = (state: TaskState) => FINAL_TASK_STATES.includes(state);

/** The scope of a task's owner: the session a task names must be one of theirs. */
const ownerOf = (task: Task): Scope => ({ tenant_id: task.tenant_id, user_id: task.user_id });

/** The event of a task's new version, with the version's snapshot. */
export function event(op: Op, task: Task, from: TaskState | null, cause: string): StoredTaskEvent {
  return {
    id: newId('event', op.env.random),
    tenant_id: task.tenant_id,
    user_id: task.user_id,
    task_id: task.id,
    from_state: from,
    to_state: task.state,
    cause,
    task_version: task.version,
    at: isoAt(op.now),
    snapshot: { slots: task.slots, data: task.data, status_line: task.status_line },
  };
}

/** What callers see of the stored events: changes of state, without snapshots. */
function shown(events: readonly StoredTaskEvent[]): TaskEvent[] {
  return events.filter((e) => e.from_state !== e.to_state).map(({ snapshot: _snapshot, ...rest }) => rest);
}

export async function insertTask(op: WriteOp, scope: Scope, input: CheckedNewTask): Promise<Task> {
  const at = isoAt(op.now);
  const task: Task = {
    id: input.id ?? newId('task', op.env.random),
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
    closed_at: isFinal(input.state) ? at : null,
  };
  await requireOwnSession(op, scope, input.session_id);
  if (!(await op.tx.insertTask(task))) throw conflict(op.env, 'task', task.id);
  await op.tx.addTaskEvent(event(op, task, null, 'created'));
  return task;
}

export async function applyTaskPatch(
  op: WriteOp,
  scope: ReadScope,
  id: string,
  expected: number,
  patch: CheckedTaskPatch,
): Promise<Task> {
  const current = await op.tx.getTask(scope, id);
  if (current === null) throw notFound(op.env, 'task', id);
  if (current.version !== expected)
    throw versionConflict(op.env.adapter, 'task', id, expected, current.version);
  const changes = patch.state !== undefined && patch.state !== current.state;
  if (changes && !canTransition(current.state, patch.state as TaskState)) {
    op.env.v.fail(`task ${id}: cannot go from ${current.state} to ${patch.state}`, {
      from: current.state,
      to: patch.state,
    });
  }
  // A new session must be one of the task owner's; keeping the one it has (maybe expired since) is no change.
  if (patch.session_id !== undefined && patch.session_id !== current.session_id) {
    await requireOwnSession(op, ownerOf(current), patch.session_id);
  }
  const at = isoAt(op.now);
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
    next.closed_at = isFinal(next.state) ? at : null;
  }
  if (!(await op.tx.replaceTask(next, current))) {
    const now = await op.tx.getTask(scope, id);
    throw versionConflict(op.env.adapter, 'task', id, expected, now?.version ?? null);
  }
  // Every version is recorded (a fork copies a task as it stood); only changes of state are shown.
  await op.tx.addTaskEvent(event(op, next, current.state, patch.cause));
  return next;
}

export async function listTasks(
  op: Op,
  scope: ReadScope,
  filter: TaskFilter,
  query: TaskQuery,
): Promise<Page<Task>> {
  const asked = await askPage(op.env, 'tasks', scope, query);
  if (filter.states !== undefined && filter.states.length === 0) return { items: [], next_cursor: null };
  return await toPage(op.env, asked, await op.tx.listTasks(scope, filter, asked.request));
}

export async function listTaskEvents(op: Op, scope: ReadScope, task_id: string): Promise<TaskEvent[]> {
  const task = await op.tx.getTask(scope, task_id);
  return task === null ? [] : shown(await op.tx.listTaskEvents(task));
}
