/**
 * What a turn does when its session is busy with another run (the session's lease is held): the
 * session's `on_busy` policy (its context's `on_busy`), or the request's own.
 * - `reject` (the default): 409 `conflict` at once, as before.
 * - `enqueue`: the input is stored in the session's queue (turn-queue.ts) and runs after the run in
 *   progress, queued inputs in the order they came, whichever instance took them; the queue survives a
 *   crash of the instance that took the input (queued-turns.ts).
 * - `interrupt`: the run in progress is asked to stop at its next safe point (it ends `run.cancelled`),
 *   then this turn runs.
 * A session that is not busy costs nothing here: the policy is read only when the lease was refused.
 */
import { invalidRequest, isAgentStateError, sessionNotFound } from '../core/errors.js';
import type { Session } from '../core/model.js';
import { requestCancel } from '../runtime/cancel.js';
import type { Scope, StateStore } from '../store/types.js';

export const ON_BUSY_POLICIES = ['reject', 'enqueue', 'interrupt'] as const;
export type OnBusy = (typeof ON_BUSY_POLICIES)[number];

/** How long a queued turn waits for the runs before it (then 409). */
export const ENQUEUE_WAIT_MS = 120_000;
/** How long an interrupting turn waits for the interrupted run to reach a safe point and end. */
export const INTERRUPT_WAIT_MS = 30_000;

export function checkOnBusy(value: unknown, where: string): OnBusy {
  if (typeof value === 'string' && (ON_BUSY_POLICIES as readonly string[]).includes(value))
    return value as OnBusy;
  throw invalidRequest(
    `${where} must be one of ${ON_BUSY_POLICIES.join(', ')}, got ${JSON.stringify(value)}`,
  );
}

/** The session's policy: its context's `on_busy`, else `reject`. */
export function sessionOnBusy(session: Pick<Session, 'id' | 'context'> | null): OnBusy {
  const value = session?.context.on_busy;
  return value === undefined ? 'reject' : checkOnBusy(value, `session ${session?.id}: context.on_busy`);
}

/** True for the error a turn gets when another run holds its session. */
export function isBusy(error: unknown): boolean {
  return isAgentStateError(error, 'conflict') && typeof error.details?.lease === 'string';
}

/** Asks the session's run in progress to stop: the run a turn of the session would be now. */
export async function interruptRun(store: StateStore, scope: Scope, sessionId: string): Promise<void> {
  const head = await store.getSessionHead(scope, sessionId, { next_run: true });
  if (head === null) throw sessionNotFound(sessionId);
  if (head.next_run !== undefined) await requestCancel(store, scope, sessionId, head.next_run.id);
}

/** Work of one session in this process (its queue's runs), one after another in the order it came. */
export class SessionQueues {
  private readonly tails = new Map<string, Promise<unknown>>();

  run<T>(sessionId: string, work: () => Promise<T>): Promise<T> {
    const before = this.tails.get(sessionId) ?? Promise.resolve();
    const mine = before.then(work, work);
    const tail = mine.catch(() => undefined);
    this.tails.set(sessionId, tail);
    void tail.then(() => {
      if (this.tails.get(sessionId) === tail) this.tails.delete(sessionId);
    });
    return mine;
  }
}
