/** Tasks: a hash per task (no TTL), a list of its events, and indexes by user, session and state. */

import { isoAt } from '../../core/clock.js';
import { AgentStateError, invalidRequest, versionConflict } from '../../core/errors.js';
import { isId, newId } from '../../core/ids.js';
import {
  canTransition,
  FINAL_TASK_STATES,
  TASK_STATES,
  type Task,
  type TaskEvent,
} from '../../core/model.js';
import { TASK_FIELDS, TASK_PATCH_FIELDS, TASK_QUERY_FIELDS } from '../shared/known-fields.js';
import {
  DEFAULT_PAGE_LIMIT,
  MAX_PAGE_LIMIT,
  type NewTask,
  type Page,
  type ReadScope,
  type Scope,
  type TaskPatch,
  type TaskQuery,
} from '../types.js';
import { noteAge } from './ages.js';
import { indexMember, memberId } from './keys.js';
import { MISSING, SKIP, scanIndex } from './lists.js';
import { type Ctx, type Plan, runPlan } from './plan.js';
import { indexInTenant, inOwnerScope, resolveUsers, tenantKeys, userKeys } from './scope.js';
import { requireOwnSession } from './sessions.js';
import * as v from './validate.js';
import { cursorList } from './validate.js';

const MAX_STATUS_LINE = 2000;

function nullableSessionId(value: unknown, name: string): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string' || !isId(value, 'session'))
    throw invalidRequest(`[redis] ${name} must be a session id`);
  return value;
}

export function checkNewTask(input: NewTask): void {
  if (typeof input !== 'object' || input === null)
    throw invalidRequest('[redis] task input must be an object');
  v.knownFields(input, TASK_FIELDS, 'task');
  v.optionalId(input.id, 'task', 'id');
  nullableSessionId(input.session_id, 'session_id');
  v.text(input.type, 'type');
  if (input.state !== undefined) v.oneOf(input.state, TASK_STATES, 'state');
  if (input.slots !== undefined) v.jsonObject(input.slots, 'task.slots');
  if (input.status_line !== undefined) v.text(input.status_line, 'status_line', MAX_STATUS_LINE, true);
  if (input.data !== undefined) v.jsonObject(input.data, 'task.data');
}

export function checkTaskPatch(patch: TaskPatch): void {
  if (typeof patch !== 'object' || patch === null)
    throw invalidRequest('[redis] task patch must be an object');
  v.knownFields(patch, TASK_PATCH_FIELDS, 'patch');
  if (patch.state !== undefined) v.oneOf(patch.state, TASK_STATES, 'patch.state');
  if (patch.slots !== undefined) v.jsonObject(patch.slots, 'task.slots');
  if (patch.status_line !== undefined) v.text(patch.status_line, 'patch.status_line', MAX_STATUS_LINE, true);
  if (patch.data !== undefined) v.jsonObject(patch.data, 'task.data');
  if (patch.session_id !== undefined) nullableSessionId(patch.session_id, 'patch.session_id');
  if (patch.cause !== undefined) v.text(patch.cause, 'patch.cause');
}

function event(plan: Plan, task: Task, from: Task['state'] | null, cause: string): TaskEvent {
  return {
    id: newId('event', plan.ctx.random),
    tenant_id: task.tenant_id,
    user_id: task.user_id,
    task_id: task.id,
    from_state: from,
    to_state: task.state,
    cause,
    task_version: task.version,
    at: task.updated_at,
  };
}

export async function prepareCreateTask(plan: Plan, scope: Scope, input: NewTask): Promise<Task> {
  const ctx = plan.ctx;
  const at = isoAt(ctx.clock.now());
  const state = input.state ?? 'INIT';
  const task: Task = {
    id: input.id ?? newId('task', ctx.random),
    tenant_id: scope.tenant_id,
    user_id: scope.user_id,
    session_id: input.session_id ?? null,
    type: input.type,
    state,
    slots: structuredClone(input.slots ?? {}),
    status_line: input.status_line ?? '',
    data: structuredClone(input.data ?? {}),
    version: 1,
    created_at: at,
    updated_at: at,
    closed_at: FINAL_TASK_STATES.includes(state) ? at : null,
  };
  const keys = userKeys(ctx, scope.tenant_id, scope.user_id);
  if ((await plan.read(keys.task(task.id))) !== null) {
    throw new AgentStateError('conflict', `[redis] task ${task.id} already exists`);
  }
  await requireOwnSession(plan, scope, task.session_id);
  plan.put(keys.task(task.id), JSON.stringify(task));
  plan.write('RPUSH', keys.taskEvents(task.id), JSON.stringify(event(plan, task, null, 'created')));
  const member = indexMember(at, task.id);
  plan.write('ZADD', keys.tasks(), 0, member);
  plan.write('ZADD', keys.tasksByState(state), 0, member);
  if (task.session_id !== null) plan.write('ZADD', keys.tasksBySession(task.session_id), 0, member);
  noteAge(plan, scope.tenant_id, scope.user_id, 'tasks', task.id, task.updated_at);
  indexInTenant(
    plan,
    scope.tenant_id,
    scope.user_id,
    task.id,
    [[tenantKeys(ctx, scope.tenant_id).tasks(), member]],
    'task',
    input.id === undefined || input.id === null,
  );
  return task;
}

/** Reads a task into the plan (null when missing). */
export async function readTask(plan: Plan, scope: Scope, id: string): Promise<Task | null> {
  if (!isId(id, 'task')) return null;
  const row = await plan.read(userKeys(plan.ctx, scope.tenant_id, scope.user_id).task(id));
  return row === null ? null : (JSON.parse(row.json) as Task);
}

export async function prepareUpdateTask(
  plan: Plan,
  scope: Scope,
  id: string,
  expected: number,
  patch: TaskPatch,
): Promise<Task> {
  const current = await readTask(plan, scope, id);
  if (current === null) throw new AgentStateError('not_found', `[redis] task ${id} not found`);
  if (current.version !== expected) throw versionConflict('redis', 'task', id, expected, current.version);
  const state = patch.state ?? current.state;
  const moved = state !== current.state;
  if (moved && !canTransition(current.state, state)) {
    throw invalidRequest(`[redis] task ${id} cannot go from ${current.state} to ${state}`, {
      from: current.state,
      to: state,
    });
  }
  // A new session must be one of the task owner's; keeping the one it has (maybe expired since) is no change.
  if (patch.session_id !== undefined && patch.session_id !== current.session_id) {
    await requireOwnSession(plan, scope, patch.session_id);
  }
  const at = isoAt(plan.ctx.clock.now());
  const next: Task = {
    ...current,
    state,
    slots: patch.slots === undefined ? current.slots : structuredClone(patch.slots),
    status_line: patch.status_line ?? current.status_line,
    data: patch.data === undefined ? current.data : structuredClone(patch.data),
    session_id: patch.session_id === undefined ? current.session_id : patch.session_id,
    version: current.version + 1,
    updated_at: at,
    closed_at: moved ? (FINAL_TASK_STATES.includes(state) ? at : null) : current.closed_at,
  };
  const keys = userKeys(plan.ctx, scope.tenant_id, scope.user_id);
  plan.put(keys.task(id), JSON.stringify(next));
  noteAge(plan, scope.tenant_id, scope.user_id, 'tasks', id, next.updated_at);
  const member = indexMember(current.created_at, id);
  if (moved) {
    plan.write(
      'RPUSH',
      keys.taskEvents(id),
      JSON.stringify(event(plan, next, current.state, patch.cause ?? 'update')),
    );
    plan.write('ZREM', keys.tasksByState(current.state), member);
    plan.write('ZADD', keys.tasksByState(state), 0, member);
  }
  if (next.session_id !== current.session_id) {
    if (current.session_id !== null) plan.write('ZREM', keys.tasksBySession(current.session_id), member);
    if (next.session_id !== null) plan.write('ZADD', keys.tasksBySession(next.session_id), 0, member);
  }
  return next;
}

export function createTask(ctx: Ctx, scope: Scope, input: NewTask): Promise<Task> {
  v.checkScope(scope);
  checkNewTask(input);
  return runPlan(ctx, (plan) => prepareCreateTask(plan, scope, input));
}

export function getTask(ctx: Ctx, scope: ReadScope, id: string): Promise<Task | null> {
  return inOwnerScope(
    ctx,
    scope,
    id,
    'task',
    async (s) => {
      const json = await ctx.redis.hget(userKeys(ctx, s.tenant_id, s.user_id).task(id), 'd');
      return json === null ? null : (JSON.parse(json) as Task);
    },
    () => null,
  );
}

export function updateTask(ctx: Ctx, scope: ReadScope, id: string, expected: number, patch: TaskPatch) {
  v.checkReadScope(scope);
  v.version(expected);
  checkTaskPatch(patch);
  return inOwnerScope(
    ctx,
    scope,
    id,
    'task',
    (s) => runPlan(ctx, (plan) => prepareUpdateTask(plan, s, id, expected, patch)),
    () => {
      throw new AgentStateError('not_found', `[redis] task ${id} not found`);
    },
  );
}

export function listTaskEvents(ctx: Ctx, scope: ReadScope, taskId: string): Promise<TaskEvent[]> {
  return inOwnerScope(
    ctx,
    scope,
    taskId,
    'task',
    async (s) => {
      const rows = await ctx.redis.lrange(userKeys(ctx, s.tenant_id, s.user_id).taskEvents(taskId), 0, -1);
      return rows.map((row) => JSON.parse(row) as TaskEvent);
    },
    (): TaskEvent[] => [],
  );
}

/** Of two sets of index keys, the one with fewer members in all (ties: the first). */
async function smallerIndex(ctx: Ctx, first: string[], second: string[]): Promise<string[]> {
  const sizes = await Promise.all([...first, ...second].map((key) => ctx.redis.zcard(key)));
  const total = (from: number, to: number) => sizes.slice(from, to).reduce((n, size) => n + size, 0);
  return total(first.length, sizes.length) < total(0, first.length) ? second : first;
}

export async function listTasks(ctx: Ctx, scope: ReadScope, query: TaskQuery = {}): Promise<Page<Task>> {
  v.checkReadScope(scope);
  v.query(query, TASK_QUERY_FIELDS);
  const limit = v.limit(query.limit, DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT);
  const states =
    query.state === undefined
      ? null
      : (Array.isArray(query.state) ? query.state : [query.state]).map((s) =>
          v.oneOf(s, TASK_STATES, 'state'),
        );
  if (query.session_id !== undefined) {
    v.text(query.session_id, 'session_id');
    if (!isId(query.session_id, 'session')) throw invalidRequest('[redis] session_id must be a session id');
  }
  if (query.type !== undefined) v.text(query.type, 'type');
  let keys: string[];
  if (scope.user_id === undefined) keys = [tenantKeys(ctx, scope.tenant_id).tasks()];
  else {
    const user = userKeys(ctx, scope.tenant_id, scope.user_id);
    const byState = states === null ? null : [...new Set(states)].map((s) => user.tasksByState(s));
    if (query.session_id !== undefined) {
      keys = [user.tasksBySession(query.session_id)];
      // A session and states (a turn's open tasks): the smaller index is scanned, the other filters. The
      // session's index holds its whole history; the user's open states hold a few tasks.
      if (byState !== null) keys = await smallerIndex(ctx, keys, byState);
    } else if (byState !== null) keys = byState;
    else keys = [user.tasks()];
  }
  return scanIndex<Task>(ctx, {
    keys,
    desc: true,
    limit,
    cursor: query.cursor,
    list: cursorList('tasks', scope),
    load: async (members) => {
      const ids = members.map(memberId);
      const users = await resolveUsers(ctx, scope, ids);
      return Promise.all(
        ids.map(async (id, i) => {
          const user = users[i];
          if (user === null || user === undefined) return SKIP;
          const json = await ctx.redis.hget(userKeys(ctx, scope.tenant_id, user).task(id), 'd');
          if (json === null) return scope.user_id === undefined ? SKIP : MISSING;
          const task = JSON.parse(json) as Task;
          if (states !== null && !states.includes(task.state)) return SKIP;
          if (query.session_id !== undefined && task.session_id !== query.session_id) return SKIP;
          if (query.type !== undefined && task.type !== query.type) return SKIP;
          return task;
        }),
      );
    },
    prune: (key, member) => ctx.redis.zrem(key, member),
  });
}
