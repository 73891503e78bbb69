/**
 * Running a session's queued input (turn-queue.ts): whoever gets the session's lease runs the queue, oldest
 * first, and records each item's outcome; a caller whose item another process ran reads its answer from
 * the run's final event.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { AgentStateError, type ErrorCode } from '../core/errors.js';
import type { TurnOutput } from '../runtime/answer.js';
import type { Scope, StateStore } from '../store/types.js';
import { isBusy } from './on-busy.js';
import { type QueuedInput, queuedInputs, readQueued, settleDone, settleFailed } from './turn-queue.js';

/** What the queue needs of the turn runner. */
export interface QueueTurns {
  /** One turn of the session; a `conflict` naming the lease when another run holds it after `waitMs`. */
  run(
    input: string,
    options: {
      readonly requestKey: string;
      readonly waitMs: number;
      readonly onRun?: (runId: string) => void;
    },
  ): Promise<TurnOutput>;
  /** The answer of a run that ended, from its final event (null when it has none). */
  answerOf(runId: string): Promise<TurnOutput | null>;
}

/** How long a lease is waited for per attempt while an item waits. */
export const QUEUE_LEASE_WAIT_MS = 1_000;
/** The pause between two looks at an item another process is running. */
const QUEUE_POLL_MS = 100;

/**
 * Runs the session's queued input in order while this process gets the lease; stops at the first item
 * whose turn finds the session busy (the run holding it runs the rest). With `mine`, stops once that
 * item ran and answers its turn.
 */
export async function drainQueue(
  store: StateStore,
  scope: Scope,
  sessionId: string,
  turns: QueueTurns,
  options: {
    readonly mine?: QueuedInput;
    readonly waitMs?: number;
    /** Told the run id of `mine` once its run starts (a streamed turn follows it from there). */
    readonly onRun?: (runId: string) => void;
  } = {},
): Promise<TurnOutput | null> {
  for (;;) {
    const waiting = await queuedInputs(store, scope, sessionId);
    if (waiting.length === 0) return null;
    for (const item of waiting) {
      let output: TurnOutput;
      try {
        const { onRun } = options;
        const mine = item.key === options.mine?.key && onRun !== undefined ? { onRun } : {};
        output = await turns.run(item.input, {
          requestKey: item.request_key,
          waitMs: options.waitMs ?? 0,
          ...mine,
        });
      } catch (error) {
        if (isBusy(error)) return null;
        await settleFailed(store, scope, item, error);
        if (item.key === options.mine?.key) throw error;
        continue;
      }
      await settleDone(store, scope, item, output.run_id);
      if (item.key === options.mine?.key) return output;
    }
  }
}

/**
 * The turn of a queued item: runs the queue when this process gets the lease, else waits for the item to
 * be run by the process that has it, until `waitMs` has passed (then a `conflict`: the input stays queued
 * and runs after the runs before it).
 */
export async function answerQueued(
  store: StateStore,
  scope: Scope,
  item: QueuedInput,
  turns: QueueTurns,
  options: { readonly waitMs: number; readonly onRun?: (runId: string) => void },
): Promise<TurnOutput> {
  const deadline = Date.now() + options.waitMs;
  const { onRun } = options;
  for (;;) {
    const ran = await drainQueue(store, scope, item.session_id, turns, {
      mine: item,
      waitMs: QUEUE_LEASE_WAIT_MS,
      ...(onRun === undefined ? {} : { onRun }),
    });
    if (ran !== null) return ran;
    const now = await readQueued(store, scope, item.key);
    if (now?.state === 'done' && now.run_id !== null) {
      const answer = await turns.answerOf(now.run_id);
      if (answer !== null) {
        onRun?.(answer.run_id);
        return answer;
      }
    }
    if (now?.state === 'failed' && now.error !== null) {
      throw new AgentStateError(errorCode(now.error.code), now.error.message, {
        details: { session_id: item.session_id, queued: item.key },
      });
    }
    if (Date.now() >= deadline) {
      throw new AgentStateError(
        'conflict',
        `session ${item.session_id} is still busy; the input stays queued and runs after the runs before it`,
        { details: { session_id: item.session_id, queued: item.key } },
      );
    }
    await sleep(QUEUE_POLL_MS);
  }
}

const CODES: readonly ErrorCode[] = [
  'invalid_request',
  'version_conflict',
  'conflict',
  'not_found',
  'closed',
  'store_unavailable',
  'illegal_transition',
  'upstream_unavailable',
];

/** The code a queued turn failed with, as recorded (one this module does not know reads `internal`). */
function errorCode(code: string): ErrorCode {
  return CODES.find((known) => known === code) ?? 'internal';
}
