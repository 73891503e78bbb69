/** Actions: recorded before they run, unique per (tenant, user, idempotency key), PENDING -> a final status. */

import { isoAt } from '../../core/clock.js';
import { AgentStateError } from '../../core/errors.js';
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
import type { ActionCompletion, ActionQuery, NewAction, Page, ReadScope, Scope } from '../types.js';
import { type Ctx, copy, key, type Row } from './db.js';
import { newestFirst } from './paging.js';
import { notFound, requireOwnSession } from './sessions.js';
import { liveTask } from './tasks.js';
import {
  ADAPTER,
  checkId,
  checkReadScope,
  checkScope,
  fail,
  inScope,
  json,
  name,
  oneOf,
  optionalId,
  record,
} from './validate.js';

export interface CheckedNewAction {
  readonly id: string | null;
  readonly task_id: string;
  readonly session_id: string | null;
  readonly type: string;
  readonly tool: string | null;
  readonly params: JsonValue;
  readonly idempotency_key: string;
}

export function checkNewAction(input: NewAction, path: string): CheckedNewAction {
  record(input, path, ACTION_FIELDS);
  if (!('params' in input)) fail(`${path}.params is required (use null for none)`);
  return {
    id: optionalId(input.id, 'action', `${path}.id`),
    task_id: checkId(input.task_id, 'task', `${path}.task_id`),
    session_id: optionalId(input.session_id, 'session', `${path}.session_id`),
    type: name(input.type, `${path}.type`),
    tool: input.tool === undefined || input.tool === null ? null : name(input.tool, `${path}.tool`),
    params: json(input.params, 'action.params'),
    idempotency_key: name(input.idempotency_key, `${path}.idempotency_key`),
  };
}

/** The existing action of the key, or a new PENDING one (the task must exist in scope). */
export function begin(c: Ctx, scope: Scope, input: CheckedNewAction): { action: Action; created: boolean } {
  const k = key(scope.tenant_id, scope.user_id, input.idempotency_key);
  const existing = c.t.actionKeys.get(k);
  if (existing !== undefined) {
    const row = c.t.actions.get(existing);
    if (row !== undefined) return { action: row.rec, created: false };
  }
  if (liveTask(c, scope, input.task_id) === null) throw notFound('task', input.task_id);
  requireOwnSession(c, scope, input.session_id);
  const id = input.id ?? newId('action', c.random);
  if (c.t.actions.has(id)) {
    throw new AgentStateError('conflict', `[${ADAPTER}] action ${id} already exists`, { details: { id } });
  }
  const at = isoAt(c.now);
  const action: Action = {
    id,
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
  c.tx.set(c.t.actions, id, { seq: c.nextSeq(), rec: action });
  c.tx.set(c.t.actionKeys, k, id);
  return { action, created: true };
}

export function beginAction(c: Ctx, scope: Scope, input: NewAction): { action: Action; created: boolean } {
  checkScope(scope);
  return copy(begin(c, scope, checkNewAction(input, 'action')));
}

function liveAction(c: Ctx, scope: ReadScope, id: string): Row<Action> | null {
  const row = c.t.actions.get(id);
  return row !== undefined && inScope(scope, row.rec) ? row : null;
}

export function getAction(c: Ctx, scope: ReadScope, id: string): Action | null {
  checkReadScope(scope);
  checkId(id, 'action', 'action id');
  const row = liveAction(c, scope, id);
  return row === null ? null : copy(row.rec);
}

export function getActionByKey(c: Ctx, scope: Scope, idempotency_key: string): Action | null {
  checkScope(scope);
  name(idempotency_key, 'idempotency_key');
  const id = c.t.actionKeys.get(key(scope.tenant_id, scope.user_id, idempotency_key));
  const row = id === undefined ? undefined : c.t.actions.get(id);
  return row === undefined ? null : copy(row.rec);
}

export interface CheckedCompletion {
  readonly status: 'SUCCESS' | 'FAILED';
  readonly result: JsonValue;
  readonly error: ActionError | null;
}

export function checkCompletion(
  input: ActionCompletion,
  path: string,
  known: readonly string[] = COMPLETION_FIELDS,
): CheckedCompletion {
  record(input, path, known);
  const status = oneOf(input.status, ['SUCCESS', 'FAILED'] as const, `${path}.status`);
  const result = input.result === undefined ? null : json(input.result, 'action.result');
  let error: ActionError | null = null;
  if (input.error !== undefined && input.error !== null) {
    record(input.error, 'action.error', ACTION_ERROR_FIELDS);
    error = {
      code: name(input.error.code, 'action.error.code'),
      message: name(input.error.message, 'action.error.message'),
    };
    if (input.error.details !== undefined) error.details = json(input.error.details, 'action.error.details');
  }
  return { status, result, error };
}

/** Moves an action to `to` when ACTION_TRANSITIONS allows it from one of `from`. */
export function transition(
  c: Ctx,
  scope: ReadScope,
  id: string,
  to: ActionStatus,
  from: readonly ActionStatus[],
  changes: Partial<Action>,
): Action {
  const row = liveAction(c, scope, id);
  if (row === null) throw notFound('action', id);
  const current = row.rec;
  if (!from.includes(current.status) || !ACTION_TRANSITIONS[current.status].includes(to)) {
    fail(`action ${id}: cannot go from ${current.status} to ${to}`, { from: current.status, to });
  }
  const at = isoAt(c.now);
  const next: Action = { ...current, ...changes, status: to, updated_at: at };
  if (to === 'SUCCESS' || to === 'FAILED') next.completed_at = at;
  c.tx.set(c.t.actions, id, { seq: row.seq, rec: next });
  return next;
}

export function complete(c: Ctx, scope: ReadScope, id: string, done: CheckedCompletion): Action {
  return transition(c, scope, id, done.status, ['PENDING'], { result: done.result, error: done.error });
}

export function completeAction(c: Ctx, scope: ReadScope, id: string, completion: ActionCompletion): Action {
  checkReadScope(scope);
  checkId(id, 'action', 'action id');
  return copy(complete(c, scope, id, checkCompletion(completion, 'completion')));
}

export function markActionUnknown(c: Ctx, scope: ReadScope, id: string, note: string): Action {
  checkReadScope(scope);
  checkId(id, 'action', 'action id');
  const why = name(note, 'note');
  return copy(transition(c, scope, id, 'UNKNOWN', ['PENDING'], { note: why }));
}

export function resolveAction(
  c: Ctx,
  scope: ReadScope,
  id: string,
  resolution: ActionCompletion & { note: string },
): Action {
  checkReadScope(scope);
  checkId(id, 'action', 'action id');
  const done = checkCompletion(resolution, 'resolution', RESOLUTION_FIELDS);
  const note = name(resolution.note, 'resolution.note');
  return copy(
    transition(c, scope, id, done.status, ['PENDING', 'UNKNOWN'], {
      result: done.result,
      error: done.error,
      note,
    }),
  );
}

export function recordAttempt(c: Ctx, scope: ReadScope, id: string): Action {
  checkReadScope(scope);
  checkId(id, 'action', 'action id');
  const row = liveAction(c, scope, id);
  if (row === null) throw notFound('action', id);
  if (row.rec.status !== 'PENDING')
    fail(`action ${id}: only a PENDING action can be attempted again, it is ${row.rec.status}`);
  const next: Action = { ...row.rec, attempts: row.rec.attempts + 1, updated_at: isoAt(c.now) };
  c.tx.set(c.t.actions, id, { seq: row.seq, rec: next });
  return copy(next);
}

export function listActions(c: Ctx, scope: ReadScope, query: ActionQuery = {}): Page<Action> {
  checkReadScope(scope);
  record(query, 'query', ACTION_QUERY_FIELDS);
  const task = query.task_id === undefined ? undefined : checkId(query.task_id, 'task', 'task_id');
  const status = query.status === undefined ? undefined : oneOf(query.status, ACTION_STATUSES, 'status');
  const rows = [...c.t.actions.values()].filter(
    ({ rec }) =>
      inScope(scope, rec) &&
      (task === undefined || rec.task_id === task) &&
      (status === undefined || rec.status === status),
  );
  return newestFirst({ key: c.t.cursorKey, name: 'actions', scope }, rows, query);
}
