/**
 * What identifies a durable run, and how it is found again: its header (recorded in every checkpoint's
 * `run` channel), the task that stands for it, and its journal read back from its latest checkpoint.
 */
import { createHash } from 'node:crypto';
import { AgentStateError } from '../core/errors.js';
import { newId } from '../core/ids.js';
import type { JsonValue } from '../core/json.js';
import type { Checkpoint, Task } from '../core/model.js';
import { runIdFor } from '../core/run-id.js';
import type { JournalEntry } from '../runtime/journal.js';
import type { RunIdentity } from '../runtime/run-context.js';
import type { Scope, StateStore } from '../store/types.js';

export interface DurableHeader extends RunIdentity {
  readonly kind: 'durable';
  readonly name: string;
  readonly task_id: string;
  readonly key: string | null;
}

/** The task id of the run a caller names by `key`: the same in every process. */
export function keyedTaskId(scope: Scope, sessionId: string, name: string, key: string): string {
  const bytes = createHash('sha256')
    .update(`durable\n${scope.tenant_id}\n${scope.user_id}\n${sessionId}\n${name}\n${key}`)
    .digest();
  return newId('task', () => bytes.subarray(0, 16));
}

export function newHeader(
  sessionId: string,
  name: string,
  key: string | null,
  taskId: string | null,
): DurableHeader {
  const task = taskId ?? newId('task');
  return { kind: 'durable', run_id: runIdFor(task, 0), session_id: sessionId, name, task_id: task, key };
}

/** True when `task` stands for a durable run (as opposed to a task of the slot-filling runtime). */
export function isRunTask(task: Task): boolean {
  return task.data.durable === true && typeof task.data.run_id === 'string';
}

function field(value: JsonValue | undefined): string | null {
  return typeof value === 'string' ? value : null;
}

export function headerOf(checkpoint: Checkpoint): DurableHeader {
  const run = checkpoint.channels.run;
  if (run !== null && typeof run === 'object' && !Array.isArray(run) && run.kind === 'durable') {
    const runId = field(run.run_id);
    const sessionId = field(run.session_id);
    const name = field(run.name);
    const taskId = field(run.task_id);
    if (runId !== null && sessionId !== null && name !== null && taskId !== null) {
      return {
        kind: 'durable',
        run_id: runId,
        session_id: sessionId,
        name,
        task_id: taskId,
        key: field(run.key),
      };
    }
  }
  throw new AgentStateError('internal', `checkpoint ${checkpoint.id} has no durable run header`);
}

export function journalOf(checkpoint: Checkpoint): JournalEntry[] {
  const journal = checkpoint.channels.journal;
  if (!Array.isArray(journal))
    throw new AgentStateError('internal', `checkpoint ${checkpoint.id} has no journal`);
  return journal.map((entry, index) => {
    if (entry !== null && typeof entry === 'object' && !Array.isArray(entry) && typeof entry.k === 'string') {
      return { k: entry.k, v: entry.v ?? null };
    }
    throw new AgentStateError('internal', `checkpoint ${checkpoint.id}: journal entry ${index} is malformed`);
  });
}

/**
 * The run's header and journal as its latest checkpoint holds them, and the traceparent of the attempt that
 * wrote that checkpoint (when it was traced).
 */
export async function readRun(
  store: StateStore,
  scope: Scope,
  task: Task,
): Promise<{ header: DurableHeader; journal: JournalEntry[]; traceparent?: JsonValue }> {
  const runId = field(task.data.run_id);
  const checkpoint = runId === null ? null : await store.latestCheckpoint(scope, runId);
  if (checkpoint === null) {
    throw new AgentStateError('internal', `durable run of task ${task.id} has no checkpoint to resume from`);
  }
  const traceparent = checkpoint.metadata.traceparent;
  return {
    header: headerOf(checkpoint),
    journal: journalOf(checkpoint),
    ...(traceparent === undefined ? {} : { traceparent }),
  };
}
