/**
 * Cancelling a run at its next safe point. A cancel is a request stored with the run's user (a memory item
 * of the reserved namespace `agentstate.runs`, kept an hour), so the run sees it on whichever instance it
 * runs; a run in this process is told at once. The run looks at its safe points only: before a model call
 * that comes before any of its actions began, and before a commit that begins an action, never between an
 * action's record and its effect. It reads the store at most every `checkEveryMs` of its own time, so a
 * short turn reads nothing.
 */
import { AgentStateError } from '../core/errors.js';
import type { Scope, StateStore } from '../store/types.js';
import { announceRunEvents } from './run-notify.js';

export const CANCEL_NAMESPACE = 'agentstate.runs';
export const CANCEL_TTL_SECONDS = 3600;
export const DEFAULT_CANCEL_CHECK_MS = 250;

const cancelKey = (runId: string) => `cancel:${runId}`;
const here = new Set<string>();
const local = (sessionId: string, runId: string) => `${sessionId}\u0000${runId}`;

/** Thrown at a safe point of a run that was asked to stop; the runtime ends the run with `run.cancelled`. */
export class RunCancelled extends Error {
  constructor(readonly runId: string) {
    super(`run ${runId} was cancelled`);
    this.name = 'RunCancelled';
  }
}

/** The error a caller waiting for a cancelled run's answer gets. */
export function cancelledError(sessionId: string, runId: string): AgentStateError {
  return new AgentStateError('conflict', `run ${runId} of session ${sessionId} was cancelled`, {
    details: { session_id: sessionId, run_id: runId, cancelled: true },
  });
}

/** Asks the run to stop at its next safe point, wherever it runs. */
export async function requestCancel(
  store: StateStore,
  scope: Scope,
  sessionId: string,
  runId: string,
): Promise<void> {
  here.add(local(sessionId, runId));
  announceRunEvents(sessionId, runId);
  await store.putMemory(scope, {
    namespace: CANCEL_NAMESPACE,
    key: cancelKey(runId),
    value: { session_id: sessionId, requested_at: new Date().toISOString() },
    ttl_seconds: CANCEL_TTL_SECONDS,
  });
}

/** A run's view of cancel requests for it. */
export class CancelWatch {
  private lastRead: number;

  constructor(
    private readonly store: StateStore,
    private readonly scope: Scope,
    private readonly sessionId: string,
    readonly runId: string,
    private readonly checkEveryMs = DEFAULT_CANCEL_CHECK_MS,
  ) {
    this.lastRead = Date.now();
  }

  /** Throws RunCancelled when the run was asked to stop. */
  async check(): Promise<void> {
    if (here.has(local(this.sessionId, this.runId))) throw new RunCancelled(this.runId);
    if (Date.now() - this.lastRead < this.checkEveryMs) return;
    this.lastRead = Date.now();
    const asked = await this.store.getMemory(this.scope, CANCEL_NAMESPACE, cancelKey(this.runId));
    if (asked !== null && (asked.expires_at === null || Date.parse(asked.expires_at) > Date.now()))
      throw new RunCancelled(this.runId);
  }

  /** The run is over: forget its request in this process. */
  done(): void {
    here.delete(local(this.sessionId, this.runId));
  }
}
