/**
 * Where a session's runs are. A run's id is derived from the session id and the seq of the session's last
 * message: an interrupted run has not appended its messages yet, so every process derives the same id and
 * finds its checkpoints; once the run commits its messages, the next run gets a new id. Finished runs are
 * named in the metadata (`run_id`) of the messages they wrote.
 */
import { invalidRequest, sessionNotFound } from '../core/errors.js';
import type { Checkpoint, Session, Task } from '../core/model.js';
import { runIdFor } from '../core/run-id.js';
import type {
  HeadLease,
  ReadScope,
  Scope,
  SessionHead,
  SessionHeadOptions,
  StateStore,
} from '../store/types.js';
import { MAX_OPEN_TASKS } from './snapshot.js';

export { runIdFor };

export interface Pending {
  /** The session as read when the run was looked for (under the caller's lease). */
  readonly session: Session;
  readonly runId: string;
  readonly checkpoint: Checkpoint | null;
  readonly lastRunId: string | null;
  /** The seq of the session's last message when the run was looked for (0 for none). */
  readonly lastSeq: number;
  /** The request key (TurnRequest.requestKey) of the run that wrote the session's last message, if any. */
  readonly lastRequestKey: string | null;
  /** With `withOpenTasks`: the user's open tasks read with the session (what a new run starts from). */
  readonly openTasks: Task[] | null;
}

export async function findRun(
  store: StateStore,
  scope: Scope,
  sessionId: string,
  withOpenTasks = false,
): Promise<Pending> {
  const head = await store.getSessionHead(
    scope,
    sessionId,
    withOpenTasks ? { open_tasks: MAX_OPEN_TASKS, next_run: true } : { next_run: true },
  );
  return pendingOf(store, scope, sessionId, head);
}

/** What a new run starts from, as read for a turn: its session's head (with `next_run`; null: not found). */
export function headOptions(lease?: HeadLease): SessionHeadOptions {
  return { open_tasks: MAX_OPEN_TASKS, next_run: true, ...(lease === undefined ? {} : { lease }) };
}

/** Where the session's run is, from its head (read with `next_run`); null: the session is not there. */
export async function pendingOf(
  store: StateStore,
  scope: Scope,
  sessionId: string,
  head: SessionHead | null,
): Promise<Pending> {
  if (head === null) throw sessionNotFound(sessionId);
  const { session, last_message: last } = head;
  if (session.status === 'ended') {
    throw invalidRequest(`session ${sessionId} has ended; start a new session (its open tasks carry over)`);
  }
  const runId = runIdFor(sessionId, last?.seq ?? 0);
  // The run's newest checkpoint is read only when the head says it has one that is not its last ('turn').
  const label = head.next_run?.id === runId ? head.next_run.checkpoint_label : undefined;
  const checkpoint = label === null || label === 'turn' ? null : await store.latestCheckpoint(scope, runId);
  const lastRun = last?.metadata.run_id;
  return {
    session,
    runId,
    checkpoint: checkpoint !== null && checkpoint.label !== 'turn' ? checkpoint : null,
    lastRunId: typeof lastRun === 'string' ? lastRun : null,
    lastSeq: last?.seq ?? 0,
    lastRequestKey: typeof last?.metadata.request_key === 'string' ? last.metadata.request_key : null,
    openTasks: head.open_tasks ?? null,
  };
}

export interface SessionRun {
  readonly run_id: string;
  /** False for the run still in flight (interrupted, or running now). */
  readonly finished: boolean;
}

/** The session's runs, newest first: the one in flight (if any), then those that wrote messages. */
export async function listSessionRuns(
  store: StateStore,
  scope: ReadScope,
  sessionId: string,
  limit = 50,
): Promise<SessionRun[]> {
  const messages = await store.lastMessages(scope, sessionId, Math.min(1000, limit * 2));
  const runs: SessionRun[] = [];
  const last = messages[messages.length - 1];
  const current = runIdFor(sessionId, last?.seq ?? 0);
  if ((await store.latestCheckpoint(scope, current)) !== null)
    runs.push({ run_id: current, finished: false });
  for (const message of [...messages].reverse()) {
    const id = message.metadata.run_id;
    if (typeof id === 'string' && !runs.some((run) => run.run_id === id))
      runs.push({ run_id: id, finished: true });
  }
  return runs.slice(0, limit);
}
