/**
 * How LangGraph's names map onto the store's: a (thread_id, checkpoint_ns) pair is one checkpoint run, a
 * LangGraph checkpoint id is a store checkpoint id derived from it, and pending writes and the thread index
 * live as memory items keyed so that a prefix finds a thread, a run or one checkpoint's writes.
 */
import { createHash } from 'node:crypto';
import { invalidRequest } from '../../core/errors.js';
import { newId } from '../../core/ids.js';
import type { Scope } from '../../store/types.js';

/** One LangGraph checkpoint run: a thread and a checkpoint namespace ('' for the root graph). */
export interface RunRef {
  readonly thread_id: string;
  readonly checkpoint_ns: string;
}

function part(value: string, field: string): string {
  try {
    return encodeURIComponent(value);
  } catch (cause) {
    throw invalidRequest(`[langgraph] ${field} is not valid text`, { field, cause: String(cause) });
  }
}

/** `thread/ns` with each part URI-encoded, so neither holds a raw '/': a prefix `thread/` finds a thread. */
export function runKey(run: RunRef): string {
  return `${threadPrefix(run.thread_id)}${part(run.checkpoint_ns, 'checkpoint_ns')}`;
}

export function threadPrefix(thread_id: string): string {
  return `${part(thread_id, 'thread_id')}/`;
}

/** The store's run id of a LangGraph run. */
export function runId(run: RunRef): string {
  return `langgraph:${runKey(run)}`;
}

/** Key of the pending writes of one task against one checkpoint. */
export function writesKey(run: RunRef, checkpoint_id: string, task_id: string): string {
  return `${writesPrefix(run, checkpoint_id)}${part(task_id, 'task_id')}`;
}

export function writesPrefix(run: RunRef, checkpoint_id: string): string {
  return `${runKey(run)}/${part(checkpoint_id, 'checkpoint_id')}/`;
}

/**
 * The store id of a LangGraph checkpoint: `ckpt_` and 128 bits of a hash of the scope, the run and the
 * LangGraph id, so every process maps one checkpoint to the same id and different users never collide.
 */
export function storeCheckpointId(scope: Scope, run: RunRef, checkpoint_id: string): string {
  const digest = createHash('sha256')
    .update(JSON.stringify([scope.tenant_id, scope.user_id, run.thread_id, run.checkpoint_ns, checkpoint_id]))
    .digest();
  return newId('checkpoint', () => digest.subarray(0, 16));
}
