/**
 * One turn in one script: every part is prepared into one plan (each part sees what the earlier ones
 * wrote), so the session, tasks, actions, messages and checkpoint become visible together or not at all.
 */

import { invalidRequest } from '../../core/errors.js';
import {
  type Action,
  type MemoryItem,
  type Message,
  OPEN_TASK_STATES,
  type Session,
  type Task,
} from '../../core/model.js';
import {
  BATCH_FIELDS,
  BATCH_MESSAGES_FIELDS,
  COMPLETION_FIELDS,
  LIST_OPEN_TASKS_FIELDS,
  RELEASE_LEASE_FIELDS,
  VERSIONED_PATCH_FIELDS,
} from '../shared/known-fields.js';
import { MAX_PAGE_LIMIT, type Scope, type TurnBatch, type TurnResult } from '../types.js';
import {
  checkCompletion,
  checkNewAction,
  completeChange,
  prepareBeginAction,
  prepareChangeAction,
} from './actions.js';
import { checkNewCheckpoint, preparePutCheckpoint } from './checkpoints.js';
import { prepareReleaseLease } from './claims.js';
import { checkNewMemory, preparePutMemory } from './memory.js';
import { checkMessages, prepareAppend } from './messages.js';
import { type Ctx, runPlan } from './plan.js';
import { checkSessionPatch, prepareUpdateSession } from './sessions.js';
import { checkNewTask, checkTaskPatch, listTasks, prepareCreateTask, prepareUpdateTask } from './tasks.js';
import * as v from './validate.js';

function checkBatch(scope: Scope, batch: TurnBatch): void {
  if (typeof batch !== 'object' || batch === null)
    throw invalidRequest('[redis] turn batch must be an object');
  v.knownFields(batch, BATCH_FIELDS, 'batch');
  if (batch.session !== undefined) {
    v.knownFields(batch.session, VERSIONED_PATCH_FIELDS, 'batch.session');
    v.text(batch.session.id, 'session.id');
    v.version(batch.session.expected_version);
    checkSessionPatch(batch.session.patch);
  }
  for (const task of batch.create_tasks ?? []) checkNewTask(task);
  for (const update of batch.update_tasks ?? []) {
    v.knownFields(update, VERSIONED_PATCH_FIELDS, 'batch.update_tasks[]');
    v.text(update.id, 'update_tasks.id');
    v.version(update.expected_version);
    checkTaskPatch(update.patch);
  }
  for (const action of batch.begin_actions ?? []) checkNewAction(action);
  for (const completion of batch.complete_actions ?? []) {
    v.text(completion.id, 'complete_actions.id');
    checkCompletion(completion, 'complete_actions[]', ['id', ...COMPLETION_FIELDS]);
  }
  if (batch.messages !== undefined) {
    v.knownFields(batch.messages, BATCH_MESSAGES_FIELDS, 'batch.messages');
    v.text(batch.messages.session_id, 'messages.session_id');
    checkMessages(batch.messages.items);
  }
  if (batch.checkpoint !== undefined) checkNewCheckpoint(batch.checkpoint);
  if (batch.release_lease !== undefined) {
    if (typeof batch.release_lease !== 'object' || batch.release_lease === null)
      throw invalidRequest('[redis] batch.release_lease must be an object');
    v.knownFields(batch.release_lease, RELEASE_LEASE_FIELDS, 'batch.release_lease');
    v.text(batch.release_lease.name, 'release_lease.name');
    v.text(batch.release_lease.owner, 'release_lease.owner');
  }
  if (batch.put_memory !== undefined) {
    if (!Array.isArray(batch.put_memory)) throw invalidRequest('[redis] batch.put_memory must be an array');
    batch.put_memory.forEach((item, i) => {
      checkNewMemory(scope, item, `put_memory[${i}]`);
    });
    const named = new Set(batch.put_memory.map((m) => JSON.stringify([m.namespace, m.key])));
    if (named.size < batch.put_memory.length)
      throw invalidRequest('[redis] batch.put_memory names one namespace and key twice');
  }
  const list = batch.list_open_tasks;
  if (list !== undefined) {
    if (typeof list !== 'object' || list === null)
      throw invalidRequest('[redis] batch.list_open_tasks must be an object');
    v.knownFields(list, LIST_OPEN_TASKS_FIELDS, 'batch.list_open_tasks');
    v.text(list.session_id, 'list_open_tasks.session_id');
    if (!Number.isInteger(list.limit) || list.limit < 1 || list.limit > MAX_PAGE_LIMIT)
      throw invalidRequest(`[redis] list_open_tasks.limit must be an integer from 1 to ${MAX_PAGE_LIMIT}`);
  }
}

export async function commitTurn(ctx: Ctx, scope: Scope, batch: TurnBatch): Promise<TurnResult> {
  v.checkScope(scope);
  checkBatch(scope, batch);
  const written = await writeTurn(ctx, scope, batch);
  const list = batch.list_open_tasks;
  if (list === undefined) return written;
  const query = { session_id: list.session_id, state: OPEN_TASK_STATES, limit: list.limit };
  return { ...written, open_tasks: (await listTasks(ctx, scope, query)).items };
}

function writeTurn(ctx: Ctx, scope: Scope, batch: TurnBatch): Promise<TurnResult> {
  return runPlan(ctx, async (plan) => {
    let session: Session | null = null;
    if (batch.session !== undefined) {
      const { id, expected_version, patch } = batch.session;
      session = await prepareUpdateSession(plan, scope, id, expected_version, patch);
    }
    const tasks: Task[] = [];
    for (const input of batch.create_tasks ?? []) tasks.push(await prepareCreateTask(plan, scope, input));
    for (const update of batch.update_tasks ?? []) {
      tasks.push(await prepareUpdateTask(plan, scope, update.id, update.expected_version, update.patch));
    }
    const actions: Action[] = [];
    const begun = new Map<string, Action>();
    for (const input of batch.begin_actions ?? []) {
      const action =
        begun.get(input.idempotency_key) ?? (await prepareBeginAction(plan, scope, input)).action;
      begun.set(input.idempotency_key, action);
      actions.push(action);
    }
    for (const completion of batch.complete_actions ?? []) {
      actions.push(await prepareChangeAction(plan, scope, completion.id, completeChange(completion)));
    }
    let messages: Message[] = [];
    if (batch.messages !== undefined) {
      const appended = await prepareAppend(plan, scope, batch.messages.session_id, batch.messages.items);
      session = appended.session;
      messages = appended.messages;
    }
    const checkpoint =
      batch.checkpoint === undefined ? null : await preparePutCheckpoint(plan, scope, batch.checkpoint);
    const memory: MemoryItem[] = [];
    for (const item of batch.put_memory ?? []) memory.push(await preparePutMemory(plan, scope, item));
    const written = {
      session,
      tasks,
      actions,
      messages,
      checkpoint,
      ...(batch.put_memory === undefined ? {} : { memory }),
    };
    const release = batch.release_lease;
    if (release === undefined) return written;
    const lease_released = await prepareReleaseLease(plan, scope, release.name, release.owner);
    return { ...written, lease_released };
  });
}
