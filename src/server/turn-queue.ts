/**
 * Input that came while its session was busy, under the `enqueue` policy, kept in the store until it has
 * run: a memory item of the session's user in the reserved namespace `agentstate.queue` (kept a day), so
 * it outlives the process that took it. Items of a session are ordered by when they were queued; each
 * is `queued`, then `done` with the run that answered it, or `failed` with the error its turn got.
 *
 * Whoever holds the session's lease runs the queue, oldest first: the caller that queued an item, when it
 * gets the lease, and the instance that ends a turn of a session whose policy is `enqueue` (so input whose
 * caller died meanwhile still runs). Each item runs with a request key of its own (the client's
 * `Idempotency-Key`, else the item's id), so an item whose run committed just before a crash, and ran
 * again, answers from that run instead of running twice.
 */
import { randomBytes } from 'node:crypto';
import { AgentStateError } from '../core/errors.js';
import type { JsonObject } from '../core/json.js';
import type { MemoryItem } from '../core/model.js';
import type { Scope, StateStore } from '../store/types.js';

export const QUEUE_NAMESPACE = 'agentstate.queue';
export const QUEUE_TTL_SECONDS = 86_400;
/** Items of a session read at a time (the queue is read again after they ran). */
const PAGE = 100;

export type QueuedState = 'queued' | 'done' | 'failed';

export interface QueuedInput {
  /** The memory key: the session id, when it was queued, and a random part (so it sorts in order). */
  readonly key: string;
  readonly session_id: string;
  readonly input: string;
  /** The key its turn runs with: the client's Idempotency-Key, else one of the item's own. */
  readonly request_key: string;
  readonly queued_at: string;
  readonly state: QueuedState;
  readonly run_id: string | null;
  readonly error: { readonly code: string; readonly message: string } | null;
}

let lastMs = 0;
let sameMs = 0;

/** A key that sorts after every key this process made before (and, clocks allowing, other processes'). */
function itemKey(sessionId: string, atMs: number): string {
  sameMs = atMs === lastMs ? sameMs + 1 : 0;
  lastMs = atMs;
  const order = `${String(atMs).padStart(15, '0')}.${String(sameMs).padStart(4, '0')}`;
  return `${sessionId}:${order}:${randomBytes(6).toString('hex')}`;
}

function fromItem(item: MemoryItem): QueuedInput | null {
  const value = item.value;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return null;
  const { session_id, input, request_key, queued_at, state, run_id, error } = value;
  if (
    typeof session_id !== 'string' ||
    typeof input !== 'string' ||
    typeof request_key !== 'string' ||
    typeof queued_at !== 'string' ||
    (state !== 'queued' && state !== 'done' && state !== 'failed')
  )
    return null;
  const failure =
    error !== null && typeof error === 'object' && !Array.isArray(error)
      ? { code: String(error.code ?? 'internal'), message: String(error.message ?? '') }
      : null;
  return {
    key: item.key,
    session_id,
    input,
    request_key,
    queued_at,
    state,
    run_id: typeof run_id === 'string' ? run_id : null,
    error: failure,
  };
}

async function write(store: StateStore, scope: Scope, item: QueuedInput): Promise<QueuedInput> {
  const { key, ...value } = item;
  await store.putMemory(scope, {
    namespace: QUEUE_NAMESPACE,
    key,
    value: value as unknown as JsonObject,
    ttl_seconds: QUEUE_TTL_SECONDS,
  });
  return item;
}

/** Stores the input at the end of the session's queue. */
export function enqueueInput(
  store: StateStore,
  scope: Scope,
  sessionId: string,
  input: string,
  requestKey?: string,
): Promise<QueuedInput> {
  const now = Date.now();
  const key = itemKey(sessionId, now);
  return write(store, scope, {
    key,
    session_id: sessionId,
    input,
    request_key: requestKey ?? `queue:${key.slice(sessionId.length + 1)}`,
    queued_at: new Date(now).toISOString(),
    state: 'queued',
    run_id: null,
    error: null,
  });
}

/** The session's input still waiting, oldest first (the first `PAGE` of them). */
export async function queuedInputs(
  store: StateStore,
  scope: Scope,
  sessionId: string,
): Promise<QueuedInput[]> {
  const page = await store.listMemory(scope, QUEUE_NAMESPACE, { prefix: `${sessionId}:`, limit: PAGE });
  return page.items
    .map(fromItem)
    .filter((item): item is QueuedInput => item !== null && item.state === 'queued')
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

/** The item as it is stored now (null once it is gone: its day is over). */
export async function readQueued(store: StateStore, scope: Scope, key: string): Promise<QueuedInput | null> {
  const item = await store.getMemory(scope, QUEUE_NAMESPACE, key);
  return item === null ? null : fromItem(item);
}

/** Records the run that answered the item. */
export function settleDone(
  store: StateStore,
  scope: Scope,
  item: QueuedInput,
  runId: string,
): Promise<QueuedInput> {
  return write(store, scope, { ...item, state: 'done', run_id: runId });
}

/** Records the error the item's turn got (the message of an error agentstate did not raise stays hidden). */
export function settleFailed(
  store: StateStore,
  scope: Scope,
  item: QueuedInput,
  error: unknown,
): Promise<QueuedInput> {
  const failure =
    error instanceof AgentStateError
      ? { code: error.code, message: error.message }
      : { code: 'internal', message: 'the queued turn failed' };
  return write(store, scope, { ...item, state: 'failed', error: failure });
}
