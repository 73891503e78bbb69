/**
 * commitTurn: every part of the batch is checked first, then applied in one transaction in this order:
 * session patch, created tasks, task updates, begun actions, completed actions, messages, checkpoint,
 * memory items, and the lease it frees.
 * Any failure (bad input, stale version, missing record, refused transition) rolls back every part.
 */

import {
  type Action,
  type Checkpoint,
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
import { begin, checkCompletion, checkNewAction, transition } from './actions.js';
import { checkNewCheckpoint, insertCheckpoint } from './checkpoints.js';
import type { SqlContext } from './context.js';
import { releaseLeaseRow } from './coordination.js';
import type { SqlExecutor } from './executor.js';
import { checkNewMemory, upsertMemory } from './memory.js';
import { appendChecked, checkMessages } from './messages.js';
import { applySessionPatch, checkSessionPatch } from './sessions.js';
import { applyTaskPatch, checkNewTask, checkTaskPatch, insertTask, listTaskRows } from './tasks.js';

export type CheckedBatch = ReturnType<typeof checkBatch>;

export function checkBatch(ctx: SqlContext, batch: TurnBatch) {
  const { v } = ctx;
  const list = <T>(value: readonly T[] | undefined, path: string): readonly T[] => {
    if (value === undefined) return [];
    if (!Array.isArray(value)) v.fail(`${path} must be an array`);
    return value;
  };
  v.record(batch, 'batch', BATCH_FIELDS);
  let session = null;
  if (batch.session !== undefined) {
    v.record(batch.session, 'batch.session', VERSIONED_PATCH_FIELDS);
    session = {
      id: v.id(batch.session.id, 'session', 'batch.session.id'),
      expected: v.positiveInt(batch.session.expected_version, 'batch.session.expected_version'),
      patch: checkSessionPatch(ctx, batch.session.patch ?? {}, 'batch.session.patch'),
    };
  }
  const creates = list(batch.create_tasks, 'batch.create_tasks').map((t, i) =>
    checkNewTask(ctx, t, `batch.create_tasks[${i}]`),
  );
  const updates = list(batch.update_tasks, 'batch.update_tasks').map((u, i) => {
    v.record(u, `batch.update_tasks[${i}]`, VERSIONED_PATCH_FIELDS);
    return {
      id: v.id(u.id, 'task', `batch.update_tasks[${i}].id`),
      expected: v.positiveInt(u.expected_version, `batch.update_tasks[${i}].expected_version`),
      patch: checkTaskPatch(ctx, u.patch, `batch.update_tasks[${i}].patch`),
    };
  });
  const begins = list(batch.begin_actions, 'batch.begin_actions').map((a, i) =>
    checkNewAction(ctx, a, `batch.begin_actions[${i}]`),
  );
  const completes = list(batch.complete_actions, 'batch.complete_actions').map((a, i) => {
    v.record(a, `batch.complete_actions[${i}]`);
    return {
      id: v.id(a.id, 'action', `batch.complete_actions[${i}].id`),
      done: checkCompletion(ctx, a, `batch.complete_actions[${i}]`, ['id', ...COMPLETION_FIELDS]),
    };
  });
  let messages = null;
  if (batch.messages !== undefined) {
    v.record(batch.messages, 'batch.messages', BATCH_MESSAGES_FIELDS);
    messages = {
      session_id: v.id(batch.messages.session_id, 'session', 'batch.messages.session_id'),
      items: checkMessages(ctx, batch.messages.items, 'batch.messages.items'),
    };
  }
  const checkpoint =
    batch.checkpoint === undefined ? null : checkNewCheckpoint(ctx, batch.checkpoint, 'batch.checkpoint');
  let release = null;
  if (batch.release_lease !== undefined) {
    v.record(batch.release_lease, 'batch.release_lease', RELEASE_LEASE_FIELDS);
    release = {
      name: v.name(batch.release_lease.name, 'batch.release_lease.name'),
      owner: v.name(batch.release_lease.owner, 'batch.release_lease.owner'),
    };
  }
  const memory = list(batch.put_memory, 'batch.put_memory').map((m, i) =>
    checkNewMemory(ctx, m, `batch.put_memory[${i}]`),
  );
  const named = new Set(memory.map((m) => JSON.stringify([m.namespace, m.key])));
  if (named.size < memory.length) v.fail('batch.put_memory names one namespace and key twice');
  const putMemory = batch.put_memory !== undefined;
  let listOpen = null;
  if (batch.list_open_tasks !== undefined) {
    v.record(batch.list_open_tasks, 'batch.list_open_tasks', LIST_OPEN_TASKS_FIELDS);
    listOpen = {
      session_id: v.id(batch.list_open_tasks.session_id, 'session', 'batch.list_open_tasks.session_id'),
      limit: v.positiveInt(batch.list_open_tasks.limit, 'batch.list_open_tasks.limit'),
    };
    if (listOpen.limit > MAX_PAGE_LIMIT)
      v.fail(`batch.list_open_tasks.limit must be at most ${MAX_PAGE_LIMIT}`);
  }
  return {
    session,
    creates,
    updates,
    begins,
    completes,
    messages,
    checkpoint,
    release,
    memory,
    putMemory,
    listOpen,
  };
}

/** The open tasks `b.listOpen` asks for, read by `q` (inside the batch's transaction, after its writes). */
export async function openTasksAfter(ctx: SqlContext, q: SqlExecutor, scope: Scope, b: CheckedBatch) {
  if (b.listOpen === null) return {};
  const { session_id, limit } = b.listOpen;
  const page = await listTaskRows(ctx, q, scope, { session_id, state: OPEN_TASK_STATES, limit });
  return { open_tasks: page.items };
}

/**
 * `oneStatementCheckpoint` (PostgreSQL): write the checkpoint's blobs and row in one statement (a
 * data-modifying WITH; see insertCheckpoint), and each task update with its read (see applyTaskPatch):
 * one round trip fewer per checkpoint and per task updated.
 */
export async function writeTurn(
  ctx: SqlContext,
  tx: SqlExecutor,
  scope: Scope,
  b: CheckedBatch,
  oneStatementCheckpoint = false,
): Promise<TurnResult> {
  let session: Session | null = null;
  const tasks: Task[] = [];
  const actions: Action[] = [];
  let messages: Message[] = [];
  let checkpoint: Checkpoint | null = null;
  if (b.session !== null) {
    session = await applySessionPatch(ctx, tx, scope, b.session.id, b.session.expected, b.session.patch);
  }
  for (const input of b.creates) tasks.push(await insertTask(ctx, tx, scope, input));
  for (const u of b.updates)
    tasks.push(await applyTaskPatch(ctx, tx, scope, u.id, u.expected, u.patch, oneStatementCheckpoint));
  for (const input of b.begins) actions.push((await begin(ctx, tx, scope, input)).action);
  for (const { id, done } of b.completes) {
    actions.push(
      await transition(ctx, tx, scope, id, done.status, ['PENDING'], {
        result: done.result,
        error: done.error,
      }),
    );
  }
  if (b.messages !== null) {
    const appended = await appendChecked(ctx, tx, scope, b.messages.session_id, b.messages.items);
    messages = appended.messages;
    if (session === null || session.id === b.messages.session_id) session = appended.session ?? session;
  }
  if (b.checkpoint !== null)
    checkpoint = await insertCheckpoint(ctx, tx, scope, b.checkpoint, oneStatementCheckpoint);
  const memory: MemoryItem[] = [];
  for (const item of b.memory) memory.push(await upsertMemory(ctx, tx, scope, item));
  const written = {
    session,
    tasks,
    actions,
    messages,
    checkpoint,
    ...(b.putMemory ? { memory } : {}),
    ...(await openTasksAfter(ctx, tx, scope, b)),
  };
  if (b.release === null) return written;
  const lease_released = await releaseLeaseRow(ctx, tx, scope, b.release.name, b.release.owner);
  return { ...written, lease_released };
}
