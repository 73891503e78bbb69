/**
 * commitTurn: every part of the batch is checked first, then applied in one transaction in this order:
 * session patch, created tasks, task updates, begun actions, completed actions, messages, checkpoint,
 * memory items, and the lease it frees.
 * Any failure (bad input, stale version, missing record, refused transition) rolls back every part.
 */

import type { Action, Checkpoint, Message, Session, Task } from '../../core/model.js';
import { OPEN_TASK_STATES } from '../../core/model.js';
import {
  BATCH_FIELDS,
  BATCH_MESSAGES_FIELDS,
  COMPLETION_FIELDS,
  LIST_OPEN_TASKS_FIELDS,
  RELEASE_LEASE_FIELDS,
  VERSIONED_PATCH_FIELDS,
} from '../shared/known-fields.js';
import { MAX_PAGE_LIMIT, type Scope, type TurnBatch, type TurnResult } from '../types.js';
import { begin, checkCompletion, checkNewAction, complete } from './actions.js';
import { checkNewCheckpoint, insertCheckpoint } from './checkpoints.js';
import { releaseLease } from './claims.js';
import { type Ctx, copy } from './db.js';
import { checkNewMemory, writeMemory } from './items.js';
import { appendChecked, checkMessages } from './messages.js';
import { applySessionPatch, checkSessionPatch } from './sessions.js';
import { applyTaskPatch, checkNewTask, checkTaskPatch, insertTask, listTasks } from './tasks.js';
import { checkId, checkScope, fail, name, positiveInt, record } from './validate.js';

function list<T>(value: readonly T[] | undefined, path: string): readonly T[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) fail(`${path} must be an array`);
  return value;
}

function checkBatch(batch: TurnBatch) {
  record(batch, 'batch', BATCH_FIELDS);
  const session =
    batch.session === undefined
      ? null
      : (() => {
          record(batch.session, 'batch.session', VERSIONED_PATCH_FIELDS);
          return {
            id: checkId(batch.session.id, 'session', 'batch.session.id'),
            expected: positiveInt(batch.session.expected_version, 'batch.session.expected_version'),
            patch: checkSessionPatch(batch.session.patch ?? {}, 'batch.session.patch'),
          };
        })();
  const creates = list(batch.create_tasks, 'batch.create_tasks').map((t, i) =>
    checkNewTask(t, `batch.create_tasks[${i}]`),
  );
  const updates = list(batch.update_tasks, 'batch.update_tasks').map((u, i) => {
    record(u, `batch.update_tasks[${i}]`, VERSIONED_PATCH_FIELDS);
    return {
      id: checkId(u.id, 'task', `batch.update_tasks[${i}].id`),
      expected: positiveInt(u.expected_version, `batch.update_tasks[${i}].expected_version`),
      patch: checkTaskPatch(u.patch, `batch.update_tasks[${i}].patch`),
    };
  });
  const begins = list(batch.begin_actions, 'batch.begin_actions').map((a, i) =>
    checkNewAction(a, `batch.begin_actions[${i}]`),
  );
  const completes = list(batch.complete_actions, 'batch.complete_actions').map((a, i) => {
    record(a, `batch.complete_actions[${i}]`);
    return {
      id: checkId(a.id, 'action', `batch.complete_actions[${i}].id`),
      done: checkCompletion(a, `batch.complete_actions[${i}]`, ['id', ...COMPLETION_FIELDS]),
    };
  });
  let messages = null;
  if (batch.messages !== undefined) {
    record(batch.messages, 'batch.messages', BATCH_MESSAGES_FIELDS);
    messages = {
      session_id: checkId(batch.messages.session_id, 'session', 'batch.messages.session_id'),
      items: checkMessages(batch.messages.items, 'batch.messages.items'),
    };
  }
  const checkpoint =
    batch.checkpoint === undefined ? null : checkNewCheckpoint(batch.checkpoint, 'batch.checkpoint');
  let release = null;
  if (batch.release_lease !== undefined) {
    record(batch.release_lease, 'batch.release_lease', RELEASE_LEASE_FIELDS);
    release = {
      name: name(batch.release_lease.name, 'batch.release_lease.name'),
      owner: name(batch.release_lease.owner, 'batch.release_lease.owner'),
    };
  }
  const memory = list(batch.put_memory, 'batch.put_memory').map((m, i) =>
    checkNewMemory(m, `batch.put_memory[${i}]`),
  );
  const named = new Set(memory.map((m) => JSON.stringify([m.namespace, m.key])));
  if (named.size < memory.length) fail('batch.put_memory names one namespace and key twice');
  let listOpen = null;
  if (batch.list_open_tasks !== undefined) {
    record(batch.list_open_tasks, 'batch.list_open_tasks', LIST_OPEN_TASKS_FIELDS);
    listOpen = {
      session_id: checkId(batch.list_open_tasks.session_id, 'session', 'batch.list_open_tasks.session_id'),
      limit: positiveInt(batch.list_open_tasks.limit, 'batch.list_open_tasks.limit'),
    };
    if (listOpen.limit > MAX_PAGE_LIMIT)
      fail(`batch.list_open_tasks.limit must be at most ${MAX_PAGE_LIMIT}`);
  }
  return { session, creates, updates, begins, completes, messages, checkpoint, release, memory, listOpen };
}

export function commitTurn(c: Ctx, scope: Scope, batch: TurnBatch): TurnResult {
  checkScope(scope);
  const b = checkBatch(batch);
  let session: Session | null = null;
  const tasks: Task[] = [];
  const actions: Action[] = [];
  let messages: Message[] = [];
  let checkpoint: Checkpoint | null = null;
  if (b.session !== null)
    session = applySessionPatch(c, scope, b.session.id, b.session.expected, b.session.patch);
  for (const input of b.creates) tasks.push(insertTask(c, scope, input));
  for (const u of b.updates) tasks.push(applyTaskPatch(c, scope, u.id, u.expected, u.patch));
  for (const input of b.begins) actions.push(begin(c, scope, input).action);
  for (const a of b.completes) actions.push(complete(c, scope, a.id, a.done));
  if (b.messages !== null) {
    messages = appendChecked(c, scope, b.messages.session_id, b.messages.items);
    if (session === null || session.id === b.messages.session_id) {
      session = c.t.sessions.get(b.messages.session_id)?.rec ?? session;
    }
  }
  if (b.checkpoint !== null) checkpoint = insertCheckpoint(c, scope, b.checkpoint);
  const memory = b.memory.map((item) => writeMemory(c, scope, item));
  const open =
    b.listOpen === null
      ? {}
      : {
          open_tasks: listTasks(c, scope, {
            session_id: b.listOpen.session_id,
            state: OPEN_TASK_STATES,
            limit: b.listOpen.limit,
          }).items,
        };
  const written = {
    ...copy({ session, tasks, actions, messages, checkpoint }),
    ...(batch.put_memory === undefined ? {} : { memory }),
    ...open,
  };
  if (b.release === null) return written;
  const lease_released = releaseLease(c, scope, b.release.name, b.release.owner);
  return { ...written, lease_released };
}
