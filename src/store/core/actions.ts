/** Actions: recorded before they run, unique per (tenant, user, idempotency key), PENDING -> a final status. */
import { isoAt } from '../../core/clock.js';
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
  RESOLUTION_FIELDS,
} from '../shared/known-fields.js';
import type {
  ActionCompletion,
  ActionQuery,
  ActionResolution,
  NewAction,
  Page,
  ReadScope,
  Scope,
} from '../types.js';
import { type CoreEnv, conflict, notFound, type Op, type WriteOp } from './context.js';
import type { ActionFilter } from './driver.js';
import { askPage, toPage } from './paging.js';
import { requireOwnSession } from './sessions.js';

export interface CheckedNewAction {
  readonly id: string | null;
  readonly task_id: string;
  readonly session_id: string | null;
  readonly type: string;
  readonly tool: string | null;
  readonly params: JsonValue;
  readonly idempotency_key: string;
}

export function checkNewAction(env: CoreEnv, input: NewAction, path: string): CheckedNewAction {
  const { v } = env;
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
  env: CoreEnv,
  input: ActionCompletion,
  path: string,
  known: readonly string[] = COMPLETION_FIELDS,
): CheckedCompletion {
  const { v } = env;
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

export function checkResolution(env: CoreEnv, input: ActionResolution): CheckedCompletion & { note: string } {
  const done = checkCompletion(env, input, 'resolution', RESOLUTION_FIELDS);
  return { ...done, note: env.v.name(input.note, 'resolution.note') };
}

export function checkActionQuery(env: CoreEnv, query: ActionQuery): ActionFilter {
  const { v } = env;
  v.record(query, 'query', ACTION_QUERY_FIELDS);
  const filter: { -readonly [K in keyof ActionFilter]: ActionFilter[K] } = {};
  if (query.task_id !== undefined) filter.task_id = v.id(query.task_id, 'task', 'task_id');
  if (query.status !== undefined) filter.status = v.oneOf(query.status, ACTION_STATUSES, 'status');
  return filter;
}

/** The existing action of the key, or a new PENDING one (the task must exist in scope). */
export async function begin(
  op: WriteOp,
  scope: Scope,
  input: CheckedNewAction,
): Promise<{ action: Action; created: boolean }> {
  const existing = await op.tx.getActionByKey(scope, input.idempotency_key);
  if (existing !== null) return { action: existing, created: false };
  if ((await op.tx.getTask(scope, input.task_id)) === null) throw notFound(op.env, 'task', input.task_id);
  await requireOwnSession(op, scope, input.session_id);
  const at = isoAt(op.now);
  const action: Action = {
    id: input.id ?? newId('action', op.env.random),
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
    created_at: at,
    updated_at: at,
    completed_at: null,
  };
  if (!(await op.tx.insertAction(action))) {
    // Taken meanwhile: by the key (another caller began it first) or by the id.
    const byKey = await op.tx.getActionByKey(scope, input.idempotency_key);
    if (byKey !== null) return { action: byKey, created: false };
    throw conflict(op.env, 'action', action.id);
  }
  return { action, created: true };
}

async function write(op: WriteOp, next: Action, current: Action): Promise<Action> {
  if (!(await op.tx.replaceAction(next, current))) {
    op.env.v.fail(`action ${current.id} changed while it was being updated: read it and try again`);
  }
  return next;
}

/** Moves an action to `to` when ACTION_TRANSITIONS allows it from one of `from`. */
export async function transition(
  op: WriteOp,
  scope: ReadScope,
  id: string,
  to: ActionStatus,
  from: readonly ActionStatus[],
  changes: Partial<Action>,
): Promise<Action> {
  const current = await op.tx.getAction(scope, id);
  if (current === null) throw notFound(op.env, 'action', id);
  if (!from.includes(current.status) || !ACTION_TRANSITIONS[current.status].includes(to)) {
    op.env.v.fail(`action ${id}: cannot go from ${current.status} to ${to}`, { from: current.status, to });
  }
  const at = isoAt(op.now);
  const next: Action = { ...current, ...changes, status: to, updated_at: at };
  if (to === 'SUCCESS' || to === 'FAILED') next.completed_at = at;
  return write(op, next, current);
}

export function complete(
  op: WriteOp,
  scope: ReadScope,
  id: string,
  done: CheckedCompletion,
): Promise<Action> {
  return transition(op, scope, id, done.status, ['PENDING'], { result: done.result, error: done.error });
}

export async function recordAttempt(op: WriteOp, scope: ReadScope, id: string): Promise<Action> {
  const current = await op.tx.getAction(scope, id);
  if (current === null) throw notFound(op.env, 'action', id);
  if (current.status !== 'PENDING')
    op.env.v.fail(`action ${id}: only a PENDING action can be attempted again, it is ${current.status}`);
  return write(op, { ...current, attempts: current.attempts + 1, updated_at: isoAt(op.now) }, current);
}

export async function listActions(
  op: Op,
  scope: ReadScope,
  filter: ActionFilter,
  query: ActionQuery,
): Promise<Page<Action>> {
  const asked = await askPage(op.env, 'actions', scope, query);
  return await toPage(op.env, asked, await op.tx.listActions(scope, filter, asked.request));
}
