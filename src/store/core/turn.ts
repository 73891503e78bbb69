/**
 * commitTurn: every part of the batch is checked first, then applied in one transaction in this order:
 * session patch, created tasks, task updates, begun actions, completed actions, messages, checkpoint,
 * memory items, another scope's memory items, the open tasks it lists, the run's events, and the lease it
 * frees.
 * Any failure (bad input, stale version, missing record, refused transition) rolls back every part.
 */
import { isoAt } from '../../core/clock.js';
import {
  type Action,
  type Checkpoint,
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
  MEMORY_KEY_FIELDS,
  OTHER_MEMORY_FIELDS,
  RELEASE_LEASE_FIELDS,
  VERSIONED_PATCH_FIELDS,
} from '../shared/known-fields.js';
import { MAX_PAGE_LIMIT, type Scope, type TurnBatch, type TurnResult } from '../types.js';
import { begin, checkCompletion, checkNewAction, complete } from './actions.js';
import { checkNewCheckpoint, insertCheckpoint } from './checkpoints.js';
import type { CoreEnv, Op, WriteOp } from './context.js';
import { releaseLease } from './coordination.js';
import { appendEvents, checkEvent, checkTurnEvents, eventsOfTurn } from './events.js';
import { type CheckedMemory, checkNewMemory, writeMemory } from './memory.js';
import { appendChecked, checkMessages } from './messages.js';
import { applySessionPatch, checkSessionPatch } from './sessions.js';
import { applyTaskPatch, checkNewTask, checkTaskPatch, insertTask } from './tasks.js';

function isoTimestamp(text: string, ms: number | undefined): boolean {
  return ms !== undefined && Number.isFinite(ms) && isoAt(ms) === text;
}

function list<T>(env: CoreEnv, value: readonly T[] | undefined, path: string): readonly T[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) env.v.fail(`${path} must be an array`);
  return value;
}

export type CheckedBatch = ReturnType<typeof checkBatch>;

export interface CheckedOtherMemory {
  readonly scope: Scope;
  readonly put: readonly CheckedMemory[];
  readonly delete: readonly { readonly namespace: string; readonly key: string }[];
}

/** `batch.other_memory` checked: its scope, its items, and no namespace and key named twice. */
function checkOtherMemory(env: CoreEnv, other: TurnBatch['other_memory']): CheckedOtherMemory | null {
  if (other === undefined) return null;
  const { v } = env;
  const path = 'batch.other_memory';
  v.record(other, path, OTHER_MEMORY_FIELDS);
  v.scope(other.scope, `${path}.scope`);
  const put = list(env, other.put, `${path}.put`).map((m, i) => checkNewMemory(env, m, `${path}.put[${i}]`));
  const removed = list(env, other.delete, `${path}.delete`).map((k, i) => {
    v.record(k, `${path}.delete[${i}]`, MEMORY_KEY_FIELDS);
    return {
      namespace: v.name(k.namespace, `${path}.delete[${i}].namespace`),
      key: v.name(k.key, `${path}.delete[${i}].key`),
    };
  });
  const named = new Set([...put, ...removed].map((m) => JSON.stringify([m.namespace, m.key])));
  if (named.size < put.length + removed.length) v.fail(`${path} names one namespace and key twice`);
  return { scope: { tenant_id: other.scope.tenant_id, user_id: other.scope.user_id }, put, delete: removed };
}

export function checkBatch(env: CoreEnv, batch: TurnBatch) {
  const { v } = env;
  v.record(batch, 'batch', BATCH_FIELDS);
  let session = null;
  if (batch.session !== undefined) {
    v.record(batch.session, 'batch.session', VERSIONED_PATCH_FIELDS);
    session = {
      id: v.id(batch.session.id, 'session', 'batch.session.id'),
      expected: v.positiveInt(batch.session.expected_version, 'batch.session.expected_version'),
      patch: checkSessionPatch(env, batch.session.patch ?? {}, 'batch.session.patch'),
    };
  }
  const creates = list(env, batch.create_tasks, 'batch.create_tasks').map((t, i) =>
    checkNewTask(env, t, `batch.create_tasks[${i}]`),
  );
  const updates = list(env, batch.update_tasks, 'batch.update_tasks').map((u, i) => {
    v.record(u, `batch.update_tasks[${i}]`, VERSIONED_PATCH_FIELDS);
    return {
      id: v.id(u.id, 'task', `batch.update_tasks[${i}].id`),
      expected: v.positiveInt(u.expected_version, `batch.update_tasks[${i}].expected_version`),
      patch: checkTaskPatch(env, u.patch, `batch.update_tasks[${i}].patch`),
    };
  });
  const begins = list(env, batch.begin_actions, 'batch.begin_actions').map((a, i) =>
    checkNewAction(env, a, `batch.begin_actions[${i}]`),
  );
  const completes = list(env, batch.complete_actions, 'batch.complete_actions').map((a, i) => {
    v.record(a, `batch.complete_actions[${i}]`);
    return {
      id: v.id(a.id, 'action', `batch.complete_actions[${i}].id`),
      done: checkCompletion(env, a, `batch.complete_actions[${i}]`, ['id', ...COMPLETION_FIELDS]),
    };
  });
  let messages = null;
  if (batch.messages !== undefined) {
    v.record(batch.messages, 'batch.messages', BATCH_MESSAGES_FIELDS);
    messages = {
      session_id: v.id(batch.messages.session_id, 'session', 'batch.messages.session_id'),
      items: checkMessages(env, batch.messages.items, 'batch.messages.items'),
    };
  }
  const checkpoint =
    batch.checkpoint === undefined ? null : checkNewCheckpoint(env, batch.checkpoint, 'batch.checkpoint');
  let release = null;
  if (batch.release_lease !== undefined) {
    v.record(batch.release_lease, 'batch.release_lease', RELEASE_LEASE_FIELDS);
    const granted = batch.release_lease.expires_at;
    const expires_ms = granted === undefined ? undefined : Date.parse(String(granted));
    if (granted !== undefined && (typeof granted !== 'string' || !isoTimestamp(granted, expires_ms)))
      v.fail('batch.release_lease.expires_at must be an ISO timestamp as acquireLease returns it');
    release = {
      name: v.name(batch.release_lease.name, 'batch.release_lease.name'),
      owner: v.name(batch.release_lease.owner, 'batch.release_lease.owner'),
      expires_ms,
    };
  }
  const memory = list(env, batch.put_memory, 'batch.put_memory').map((m, i) =>
    checkNewMemory(env, m, `batch.put_memory[${i}]`),
  );
  const named = new Set(memory.map((m) => JSON.stringify([m.namespace, m.key])));
  if (named.size < memory.length) v.fail('batch.put_memory names one namespace and key twice');
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
  const putMemory = batch.put_memory !== undefined;
  const otherMemory = checkOtherMemory(env, batch.other_memory);
  const events = batch.events === undefined ? null : checkTurnEvents(env, batch.events, 'batch.events');
  return {
    events,
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
    otherMemory,
    listOpen,
  };
}

export async function putOther(op: WriteOp, other: CheckedOtherMemory): Promise<void> {
  for (const item of other.put) await writeMemory(op, other.scope, item);
}

/** No read first: nothing is answered of it, and an item not there is no error. */
export async function deleteOther(op: WriteOp, other: CheckedOtherMemory): Promise<void> {
  for (const k of other.delete) await op.tx.deleteMemory(other.scope, k.namespace, k.key);
}

/** The open tasks a batch asks for, as they are now. */
export async function listOpenTasks(op: Op, scope: Scope, b: CheckedBatch): Promise<Task[] | null> {
  if (b.listOpen === null) return null;
  const filter = { session_id: b.listOpen.session_id, states: OPEN_TASK_STATES };
  const open = await op.tx.listTasks(scope, filter, { after: null, limit: b.listOpen.limit });
  return open.map((row) => row.rec);
}

/**
 * Writes the batch; `listOpen` false lists the open tasks only from rows the driver knows (knownOpenTasks),
 * else leaves them to a read after the commit.
 */
export async function commitTurn(
  op: WriteOp,
  scope: Scope,
  b: CheckedBatch,
  listOpen = true,
): Promise<TurnResult> {
  let session: Session | null = null;
  const tasks: Task[] = [];
  const actions: Action[] = [];
  let messages: Message[] = [];
  let checkpoint: Checkpoint | null = null;
  if (b.session !== null)
    session = await applySessionPatch(op, scope, b.session.id, b.session.expected, b.session.patch);
  for (const input of b.creates) tasks.push(await insertTask(op, scope, input));
  for (const u of b.updates) tasks.push(await applyTaskPatch(op, scope, u.id, u.expected, u.patch));
  for (const input of b.begins) actions.push((await begin(op, scope, input)).action);
  for (const a of b.completes) actions.push(await complete(op, scope, a.id, a.done));
  if (b.messages !== null) {
    const appended = await appendChecked(op, scope, b.messages.session_id, b.messages.items);
    messages = appended.messages;
    if (session === null || session.id === b.messages.session_id) session = appended.session;
  }
  if (b.checkpoint !== null) checkpoint = await insertCheckpoint(op, scope, b.checkpoint);
  const memory = [];
  for (const item of b.memory) memory.push(await writeMemory(op, scope, item));
  if (b.otherMemory !== null) {
    await putOther(op, b.otherMemory);
    await deleteOther(op, b.otherMemory);
  }
  let result: TurnResult = {
    session,
    tasks,
    actions,
    messages,
    checkpoint,
    ...(b.putMemory ? { memory } : {}),
  };
  // A driver that lists only after the commit may know the list already (its rows, held unchanged).
  const open = listOpen
    ? await listOpenTasks(op, scope, b)
    : b.listOpen === null
      ? null
      : (op.tx.knownOpenTasks?.(scope, b.listOpen.session_id, b.listOpen.limit) ?? null);
  if (open !== null) result = { ...result, open_tasks: open };
  if (b.events !== null) {
    const { session_id, run_id, items, final } = b.events;
    const last = final === null ? [] : [checkEvent(op.env, final(result), 'batch.events.final()')];
    await appendEvents(op, scope, session_id, run_id, [...items, ...eventsOfTurn(result), ...last]);
  }
  if (b.release === null) return result;
  const { name, owner, expires_ms } = b.release;
  return { ...result, lease_released: await releaseLease(op, scope, name, owner, expires_ms) };
}
