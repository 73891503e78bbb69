/**
 * The messages between the main thread and its turn threads (`serve --turn-threads N`), and how an error
 * crosses between them: an AgentStateError keeps its code, message and details, so the HTTP layer answers
 * exactly as it would for a turn run on the main thread.
 */
import { AgentStateError, type ErrorCode } from '../../core/errors.js';
import type { RunRecoveryOptions } from '../../runtime/run-marks.js';
import type { Scope } from '../../store/types.js';
import type { AgentsModuleRef } from '../agents-modules.js';
import type { ModelsSpec } from '../models.js';
import type { SessionRef, TurnResponse } from '../turn-runner.js';

/** What a turn thread is started with (its workerData). */
export interface TurnThreadData {
  readonly storeUrl: string;
  /** The agents modules the thread's runtime is built from (agents-modules.ts). */
  readonly modules: readonly AgentsModuleRef[];
  /** The models turns run with (models.ts), as the main thread resolved them. */
  readonly models: ModelsSpec;
  /** The SQLite write locks of the main thread (thread-write-lock.ts), shared with the thread. */
  readonly writeLocks: [string, SharedArrayBuffer][];
  /** The server instance, when its runs are marked for recovery (RuntimeOptions.recovery). */
  readonly recovery?: RunRecoveryOptions;
  /**
   * The main thread's count of waiters for run events (run-notify.ts): the thread tells of stored events
   * only while one waits (a follower that starts later reads them from the store).
   */
  readonly runWaiters: SharedArrayBuffer;
}

export type ToThread =
  | {
      readonly type: 'turn';
      readonly id: number;
      readonly scope: Scope;
      readonly session: SessionRef;
      readonly input: string;
      /** The request's on_busy choice (TurnCallOptions.onBusy). */
      readonly onBusy?: 'reject' | 'enqueue' | 'interrupt';
      /** The request's Idempotency-Key (TurnCallOptions.requestKey). */
      readonly requestKey?: string;
      /** The caller wants the run's id as it starts (TurnCallOptions.onRun): the thread sends `run`. */
      readonly onRun?: true;
      /** The W3C traceparent of the main thread's span the turn belongs to, when traced. */
      readonly traceparent?: string;
    }
  | {
      readonly type: 'resume';
      readonly id: number;
      readonly scope: Scope;
      readonly session: SessionRef;
      readonly traceparent?: string;
    }
  | { readonly type: 'metrics'; readonly id: number }
  | { readonly type: 'close' };

export interface SentError {
  readonly code: ErrorCode | null;
  readonly message: string;
  readonly details?: Readonly<Record<string, unknown>>;
}

export type FromThread =
  | { readonly type: 'ready' }
  | { readonly type: 'failed'; readonly error: SentError }
  | { readonly type: 'done'; readonly id: number; readonly value: TurnResponse }
  /**
   * The turn's run has started: sent when the caller asked (TurnCallOptions.onRun) or something on the main
   * thread waits for run events (it may follow this run).
   */
  | { readonly type: 'run'; readonly id: number; readonly runId: string }
  /**
   * A run on the thread stored events (runtime/run-notify.ts): the main thread's followers wake. Sent only
   * while something there waits for run events.
   */
  | { readonly type: 'events'; readonly sessionId: string; readonly runId: string }
  | { readonly type: 'error'; readonly id: number; readonly error: SentError }
  | { readonly type: 'metrics'; readonly id: number; readonly value: unknown };

export function sendableError(error: unknown): SentError {
  if (error instanceof AgentStateError) {
    return {
      code: error.code,
      message: error.message,
      ...(error.details === undefined ? {} : { details: error.details }),
    };
  }
  return { code: null, message: error instanceof Error ? error.message : String(error) };
}

export function receivedError(sent: SentError): Error {
  if (sent.code === null) return new Error(sent.message);
  return new AgentStateError(
    sent.code,
    sent.message,
    sent.details === undefined ? {} : { details: sent.details },
  );
}
