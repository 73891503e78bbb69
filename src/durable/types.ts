/** The public shapes of durable runs: what `durableRun` takes, what its context offers, what it answers. */
import type { Clock } from '../core/clock.js';
import type { JsonValue } from '../core/json.js';
import type { RetryPolicy } from '../runtime/actions.js';
import type { HeldLease } from '../runtime/lease.js';
import type { RunEventLog, RunEventLogOptions } from '../runtime/run-events.js';
import type { Scope } from '../store/types.js';
import type { Typed } from './codec.js';

export interface DurableRunOptions {
  readonly scope: Scope;
  readonly sessionId: string;
  /**
   * The run's name, kept as its task's type (default `durable`). A call continues the session's open run
   * of this name, or starts one.
   */
  readonly name?: string;
  /**
   * Names the run for the caller (up to 200 characters). A call with the key of a run that finished
   * answers that run's outcome instead of starting another: a caller that lost an answer asks again
   * safely. Without a key, a call starts a new run whenever the session has no open run of `name`.
   */
  readonly key?: string;
  /**
   * What the caller brings. A new run's first `waitForInput` takes it without pausing; for a run that
   * waits for input, it is the answer. A run that was interrupted elsewhere (not waiting) does not take
   * it: the answer says `input_used: false`.
   */
  readonly input?: JsonValue;
  /**
   * Give `input` to a run that was interrupted (not waiting) as well: for a caller that knows the run has
   * not taken it yet (a turn resumed after a crash; see kernel-program.ts). Default false.
   */
  readonly inputToInterrupted?: boolean;
  /** Retries of actions: attempts, backoff and the time-out of one call (`DEFAULT_RETRY`). */
  readonly retry?: Partial<RetryPolicy>;
  /**
   * The session's run lease: owner (default pid + random), TTL in ms (default 10000, renewed while the
   * run lasts), and how long to wait for a lease another process holds (default 0: `conflict` at once).
   */
  readonly lease?: {
    readonly owner?: string;
    readonly ttlMs?: number;
    readonly waitMs?: number;
    /**
     * The session's lease, which the caller holds already (a turn that runs an agent's code): the run
     * neither takes nor frees it, and renews it as it goes.
     */
    readonly held?: HeldLease;
  };
  /** Source of `ctx.now()` and of sleep deadlines. Default: the system clock. */
  readonly clock?: Clock;
  /** Session TTL while the run waits for input, in seconds (default 86400). */
  readonly waitingTtlSeconds?: number;
  /** Checkpoints kept of a finished run (default 20); `false` keeps them all. */
  readonly keepCheckpoints?: number | false;
  /** How the run's events merge streamed text (`ctx` has no streaming yet; see RunEventLog). */
  readonly events?: RunEventLogOptions;
  /**
   * The log of a run of the same session this run's events go into (a turn that runs an agent's code
   * streams the code's task and action events): the run then writes no `run.started` and no final event.
   */
  readonly eventLog?: RunEventLog;
}

/** Options of a run whose result is not plain JSON, or is to be validated. */
export type TypedRunOptions<R> = DurableRunOptions & { readonly result: Typed<R> };

/** What `lookup` says about a call made with an idempotency key. */
export type LookupAnswer<R> =
  | { readonly found: true; readonly result: R }
  | { readonly found: false }
  | { readonly found: 'ambiguous'; readonly reason: string };

export interface ActionCall {
  /** Stable for the action: the same on every retry and after a crash. Pass it on to the downstream. */
  readonly idempotencyKey: string;
  /** Aborted when the call's time-out elapses. */
  readonly signal: AbortSignal;
  /** 1 for the first call, 2 for the first retry, ... */
  readonly attempt: number;
}

export interface ActionHandlers<R> {
  /**
   * Performs the effect. Throw `ToolError('rejected', ...)` when the downstream refused (the action
   * fails), `ToolError('retryable', ...)` when nothing was done (retried with the same key); any other
   * error, and a time-out, means the outcome is unknown and goes through `lookup`.
   */
  run(idempotencyKey: string, call: ActionCall): Promise<R>;
  /**
   * Whether a call with this key took effect: asked when the outcome is unknown (a crash during the
   * call, a time-out). Without it such an action becomes UNKNOWN, for a person to resolve.
   */
  lookup?(idempotencyKey: string): Promise<LookupAnswer<R>>;
}

export interface WaitOptions {
  /** What the run asks; kept on the run's task and in the waiting answer. */
  readonly prompt?: string;
}

export interface DurableContext {
  readonly runId: string;
  readonly sessionId: string;
  readonly scope: Scope;
  /** The id of the task that stands for the run (its actions belong to it). */
  readonly taskId: string;
  /** True while the run replays values an earlier attempt recorded. */
  readonly replaying: boolean;

  /** Runs `fn` once and records its JSON result; a replay returns the recorded result without calling it. */
  step<T extends JsonValue>(name: string, fn: () => Promise<T> | T): Promise<T>;
  step<T>(name: string, fn: () => Promise<T> | T, typed: Typed<T>): Promise<T>;

  /**
   * One effect on the outside world, exactly once: recorded PENDING with an idempotency key before `run`
   * is called, SUCCESS or FAILED after. A run resumed while it was PENDING asks `lookup` (found: SUCCESS;
   * not found: run again with the same key; ambiguous or no lookup: UNKNOWN, and the run stops until a
   * person resolves the action). A FAILED action throws `ActionFailedError`.
   */
  action<R extends JsonValue>(name: string, params: JsonValue, handlers: ActionHandlers<R>): Promise<R>;
  action<R>(name: string, params: JsonValue, handlers: ActionHandlers<R> & Typed<R>): Promise<R>;

  /** The time in ms since the epoch, recorded. */
  now(): Promise<number>;
  /** A random number in [0, 1), recorded. */
  random(): Promise<number>;
  /** Waits until `ms` after the first attempt reached this point (a resumed run waits only what is left). */
  sleep(ms: number): Promise<void>;

  /**
   * Input from a person: the input this call brought when there is one to take; otherwise the run pauses
   * and `durableRun` answers `waiting`. A later call with the input (from any process) continues it. An
   * input that `typed` refuses is an `invalid_request` error, and the run keeps waiting.
   */
  waitForInput(options?: WaitOptions): Promise<JsonValue>;
  waitForInput<T>(options: WaitOptions & Typed<T>): Promise<T>;
}

interface Outcome {
  readonly run_id: string;
  readonly task_id: string;
  /** True when part of the run was replayed from an earlier attempt's journal. */
  readonly resumed: boolean;
  /** Whether the run took the input this call brought. */
  readonly input_used: boolean;
}

export type DurableResult<R> =
  | (Outcome & { readonly status: 'done'; readonly value: R })
  | (Outcome & { readonly status: 'waiting'; readonly prompt: string | null })
  | (Outcome & {
      readonly status: 'blocked';
      /** The UNKNOWN action a person must resolve before the run can go on. */
      readonly action_id: string;
      readonly note: string;
    })
  | (Outcome & {
      readonly status: 'failed';
      readonly error: { readonly code: string; readonly message: string };
    });
