/**
 * Actions: a hash per action (no TTL), the user's idempotency keys (key -> action id) and indexes by user,
 * task and status; the cross-tenant counts of PENDING and UNKNOWN actions are set after each write commits
 * (action-stats.ts). Beginning an action checks in the same script that its key is still free, so two
 * concurrent beginnings of one key create one action; the other caller gets it back.
 */

import { isoAt } from '../../core/clock.js';
import { AgentStateError, invalidRequest } from '../../core/errors.js';
import { isId, newId } from '../../core/ids.js';
import type { Action, ActionStatus } from '../../core/model.js';
import {
  ACTION_ERROR_FIELDS,
  ACTION_FIELDS,
  COMPLETION_FIELDS,
  RESOLUTION_FIELDS,
} from '../shared/known-fields.js';
import type { ActionCompletion, NewAction, ReadScope, Scope } from '../types.js';
import { countActionAfterCommit } from './action-stats.js';
import { noteAge } from './ages.js';
import { indexMember } from './keys.js';
import { type Ctx, type Plan, runPlan } from './plan.js';
import { indexInTenant, inOwnerScope, tenantKeys, userKeys } from './scope.js';
import { requireOwnSession } from './sessions.js';
import { readTask } from './tasks.js';
import * as v from './validate.js';

export const MAX_KEY_LENGTH = 512;

export function checkNewAction(input: NewAction): void {
  if (typeof input !== 'object' || input === null)
    throw invalidRequest('[redis] action input must be an object');
  v.knownFields(input, ACTION_FIELDS, 'action');
  v.optionalId(input.id, 'action', 'id');
  if (typeof input.task_id !== 'string' || !isId(input.task_id, 'task')) {
    throw invalidRequest('[redis] task_id must be a task id');
  }
  if (
    input.session_id !== undefined &&
    input.session_id !== null &&
    !isId(String(input.session_id), 'session')
  ) {
    throw invalidRequest('[redis] session_id must be a session id or null');
  }
  v.text(input.type, 'type');
  v.nullableText(input.tool, 'tool');
  v.jsonValue(input.params, 'params');
  v.text(input.idempotency_key, 'idempotency_key', MAX_KEY_LENGTH);
}

export function checkCompletion(
  completion: ActionCompletion,
  name = 'completion',
  known: readonly string[] = COMPLETION_FIELDS,
): void {
  if (typeof completion !== 'object' || completion === null)
    throw invalidRequest(`[redis] ${name} must be an object`);
  v.knownFields(completion, known, name);
  v.oneOf(completion.status, ['SUCCESS', 'FAILED'] as const, `${name}.status`);
  if (completion.result !== undefined) v.jsonValue(completion.result, `${name}.result`);
  if (completion.error !== undefined && completion.error !== null) {
    const error = completion.error;
    if (typeof error !== 'object') throw invalidRequest(`[redis] ${name}.error must be an object`);
    v.knownFields(error, ACTION_ERROR_FIELDS, `${name}.error`);
    v.text(error.code, `${name}.error.code`);
    v.text(error.message, `${name}.error.message`, v.MAX_TEXT_LENGTH);
    if (error.details !== undefined) v.jsonValue(error.details, `${name}.error.details`);
  }
}

/** Begins an action in the plan, or returns the one that holds its idempotency key. */
export async function prepareBeginAction(
  plan: Plan,
  scope: Scope,
  input: NewAction,
): Promise<{ action: Action; created: boolean }> {
  const ctx = plan.ctx;
  const keys = userKeys(ctx, scope.tenant_id, scope.user_id);
  const existingId = await ctx.redis.hget(keys.actionKeys(), input.idempotency_key);
  if (existingId !== null) {
    const existing = await plan.read(keys.action(existingId));
    if (existing !== null) return { action: JSON.parse(existing.json) as Action, created: false };
  }
  plan.check(keys.actionKeys(), input.idempotency_key, existingId);
  const task = await readTask(plan, scope, input.task_id);
  if (task === null) throw new AgentStateError('not_found', `[redis] task ${input.task_id} not found`);
  await requireOwnSession(plan, scope, input.session_id);
  const at = isoAt(ctx.clock.now());
  const action: Action = {
    id: input.id ?? newId('action', ctx.random),
    tenant_id: scope.tenant_id,
    user_id: scope.user_id,
    task_id: task.id,
    session_id: input.session_id ?? task.session_id,
    type: input.type,
    tool: input.tool ?? null,
    params: structuredClone(input.params),
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
  if ((await plan.read(keys.action(action.id))) !== null) {
    throw new AgentStateError('conflict', `[redis] action ${action.id} already exists`);
  }
  plan.put(keys.action(action.id), JSON.stringify(action));
  plan.write('HSET', keys.actionKeys(), action.idempotency_key, action.id);
  const member = indexMember(at, action.id);
  plan.write('ZADD', keys.actions(), 0, member);
  plan.write('ZADD', keys.actionsByTask(task.id), 0, member);
  plan.write('ZADD', keys.actionsByStatus('PENDING'), 0, member);
  indexInTenant(
    plan,
    scope.tenant_id,
    scope.user_id,
    action.id,
    [[tenantKeys(ctx, scope.tenant_id).actions(), member]],
    'action',
    input.id === undefined || input.id === null,
  );
  countActionAfterCommit(plan, action);
  return { action, created: true };
}

export type ActionChange = (action: Action, at: string) => Action;

/** Reads an action into the plan, applies `change` and writes it with its status index moved. */
export async function prepareChangeAction(plan: Plan, scope: Scope, id: string, change: ActionChange) {
  const keys = userKeys(plan.ctx, scope.tenant_id, scope.user_id);
  const row = isId(id, 'action') ? await plan.read(keys.action(id)) : null;
  if (row === null) throw new AgentStateError('not_found', `[redis] action ${id} not found`);
  const current = JSON.parse(row.json) as Action;
  const next = change(current, isoAt(plan.ctx.clock.now()));
  plan.put(keys.action(id), JSON.stringify(next));
  // Retention only looks at finished actions; a finished action never changes again.
  if (next.status === 'SUCCESS' || next.status === 'FAILED') {
    noteAge(plan, scope.tenant_id, scope.user_id, 'actions', id, next.updated_at);
  }
  if (next.status !== current.status) {
    const member = indexMember(current.created_at, id);
    plan.write('ZREM', keys.actionsByStatus(current.status), member);
    plan.write('ZADD', keys.actionsByStatus(next.status), 0, member);
  }
  countActionAfterCommit(plan, next);
  return next;
}

function requireStatus(action: Action, allowed: readonly ActionStatus[], to: ActionStatus): void {
  if (!allowed.includes(action.status)) {
    throw invalidRequest(`[redis] action ${action.id} cannot go from ${action.status} to ${to}`, {
      from: action.status,
      to,
    });
  }
}

function finish(action: Action, completion: ActionCompletion, at: string, note: string | null): Action {
  return {
    ...action,
    status: completion.status,
    result: completion.result === undefined ? null : structuredClone(completion.result),
    error:
      completion.error === undefined || completion.error === null ? null : structuredClone(completion.error),
    note: note ?? action.note,
    updated_at: at,
    completed_at: at,
  };
}

export const completeChange =
  (completion: ActionCompletion): ActionChange =>
  (action, at) => {
    requireStatus(action, ['PENDING'], completion.status);
    return finish(action, completion, at, null);
  };

export function beginAction(ctx: Ctx, scope: Scope, input: NewAction) {
  v.checkScope(scope);
  checkNewAction(input);
  return runPlan(ctx, (plan) => prepareBeginAction(plan, scope, input));
}

export function getAction(ctx: Ctx, scope: ReadScope, id: string): Promise<Action | null> {
  return inOwnerScope(
    ctx,
    scope,
    id,
    'action',
    async (s) => {
      const json = await ctx.redis.hget(userKeys(ctx, s.tenant_id, s.user_id).action(id), 'd');
      return json === null ? null : (JSON.parse(json) as Action);
    },
    () => null,
  );
}

export async function getActionByKey(ctx: Ctx, scope: Scope, key: string): Promise<Action | null> {
  v.checkScope(scope);
  v.text(key, 'idempotency_key', MAX_KEY_LENGTH);
  const id = await ctx.redis.hget(userKeys(ctx, scope.tenant_id, scope.user_id).actionKeys(), key);
  return id === null ? null : getAction(ctx, scope, id);
}

function change(ctx: Ctx, scope: ReadScope, id: string, fn: ActionChange): Promise<Action> {
  return inOwnerScope(
    ctx,
    scope,
    id,
    'action',
    (s) => runPlan(ctx, (plan) => prepareChangeAction(plan, s, id, fn)),
    () => {
      throw new AgentStateError('not_found', `[redis] action ${id} not found`);
    },
  );
}

export function completeAction(ctx: Ctx, scope: ReadScope, id: string, completion: ActionCompletion) {
  v.checkReadScope(scope);
  checkCompletion(completion);
  return change(ctx, scope, id, completeChange(completion));
}

export function markActionUnknown(ctx: Ctx, scope: ReadScope, id: string, note: string) {
  v.checkReadScope(scope);
  v.text(note, 'note', v.MAX_TEXT_LENGTH);
  return change(ctx, scope, id, (action, at) => {
    requireStatus(action, ['PENDING'], 'UNKNOWN');
    return { ...action, status: 'UNKNOWN', note, updated_at: at };
  });
}

export function resolveAction(
  ctx: Ctx,
  scope: ReadScope,
  id: string,
  resolution: ActionCompletion & { note: string },
) {
  v.checkReadScope(scope);
  checkCompletion(resolution, 'resolution', RESOLUTION_FIELDS);
  v.text(resolution.note, 'resolution.note', v.MAX_TEXT_LENGTH);
  return change(ctx, scope, id, (action, at) => {
    requireStatus(action, ['PENDING', 'UNKNOWN'], resolution.status);
    return finish(action, resolution, at, resolution.note);
  });
}

export function recordAttempt(ctx: Ctx, scope: ReadScope, id: string) {
  v.checkReadScope(scope);
  return change(ctx, scope, id, (action, at) => {
    requireStatus(action, ['PENDING'], 'PENDING');
    return { ...action, attempts: action.attempts + 1, updated_at: at };
  });
}
