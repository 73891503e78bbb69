/**
 * Running one tool call idempotently, and recovering one whose outcome is not known.
 *
 * - The idempotency key is derived from task id, step index and canonical params (sha256), so every retry
 *   and every resumed run sends the same key.
 * - A `ToolError('rejected')` fails the action; a `ToolError('retryable')` is retried with backoff and the
 *   same key (`recordAttempt`), up to `maxAttempts`.
 * - A time-out, or any other error, is NOT a failure: the outcome is unknown, so it goes through recovery:
 *   `lookup(key)` found -> SUCCESS with its result; not found -> run again with the same key (attempts
 *   permitting); no lookup or an ambiguous answer -> UNKNOWN, for a person to resolve.
 */
import { createHash } from 'node:crypto';
import { canonicalJson, type JsonValue } from '../core/json.js';
import type { Action } from '../core/model.js';
import { annotate } from '../observability/tracing.js';
import type { Scope, StateStore } from '../store/types.js';
import { type Tool, ToolError } from './tool.js';

/**
 * The idempotency key of step `stepIndex` of a task. `round` counts executions of the task (a retry after
 * FAILED is a new round, so its calls get new keys); it is left out of the key in round 0.
 */
export function actionKey(taskId: string, stepIndex: number, params: JsonValue, round = 0): string {
  const step = round === 0 ? String(stepIndex) : `${round}.${stepIndex}`;
  const digest = createHash('sha256')
    .update(`${taskId}\n${step}\n${canonicalJson(params)}`)
    .digest('base64url');
  return `${taskId}:${step}:${digest.slice(0, 32)}`;
}

export interface RetryPolicy {
  /** Attempts in all, the first included. Default 3. */
  readonly maxAttempts: number;
  /** Delay before the first retry; doubled each time, capped at `maxDelayMs`. Default 200. */
  readonly baseDelayMs: number;
  /** Default 2000. */
  readonly maxDelayMs: number;
  /** Time-out of one call (execute or lookup). Default 30000. */
  readonly timeoutMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = {
  maxAttempts: 3,
  baseDelayMs: 200,
  maxDelayMs: 2_000,
  timeoutMs: 30_000,
};

/** The outcome of a tool call, settled and recorded by `performAction` (src/durable/action.ts). */
export type ToolOutcome =
  | { readonly status: 'SUCCESS'; readonly result: JsonValue; readonly via: 'execute' | 'lookup' | 'store' }
  | { readonly status: 'FAILED'; readonly code: string; readonly message: string }
  | { readonly status: 'UNKNOWN'; readonly note: string };

const TIMED_OUT = Symbol('timed out');

async function withTimeout<T>(
  ms: number,
  run: (signal: AbortSignal) => Promise<T>,
): Promise<{ value: T } | { timedOut: true }> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<typeof TIMED_OUT>((resolve) => {
    timer = setTimeout(() => {
      controller.abort(new Error(`timed out after ${ms} ms`));
      resolve(TIMED_OUT);
    }, ms);
  });
  try {
    const winner = await Promise.race([run(controller.signal), timeout]);
    return winner === TIMED_OUT ? { timedOut: true } : { value: winner as T };
  } finally {
    clearTimeout(timer);
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function backoff(policy: RetryPolicy, attempt: number): number {
  return Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.max(0, attempt - 1));
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

export interface ActionRunner {
  readonly store: StateStore;
  readonly scope: Scope;
  readonly tool: Tool;
  readonly policy: RetryPolicy;
}

/** Executes a fresh action (attempt 1 is already counted by the store) until its outcome is known or unknown. */
export async function executeAction(runner: ActionRunner, action: Action, attempt = 1): Promise<ToolOutcome> {
  const { tool, policy } = runner;
  const parsed = tool.params.safeParse(action.params);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.join('.') || '(params)';
    return {
      status: 'FAILED',
      code: 'invalid_params',
      message: `${tool.name} ${where}: ${issue?.message ?? 'invalid'}`,
    };
  }
  let current = attempt;
  for (;;) {
    annotate({ 'agentstate.action.attempt': current });
    let outcome: { value: JsonValue } | { timedOut: true };
    try {
      outcome = await withTimeout(policy.timeoutMs, (signal) =>
        tool.execute(parsed.data, { idempotencyKey: action.idempotency_key, signal, attempt: current }),
      );
    } catch (error) {
      if (error instanceof ToolError && error.kind === 'rejected') {
        return { status: 'FAILED', code: error.code, message: error.message };
      }
      if (error instanceof ToolError && error.kind === 'retryable') {
        if (current >= policy.maxAttempts) {
          return {
            status: 'FAILED',
            code: error.code,
            message: `${error.message} (after ${current} attempts)`,
          };
        }
        await sleep(backoff(policy, current));
        await runner.store.recordAttempt(runner.scope, action.id);
        current++;
        continue;
      }
      return recoverAction(
        runner,
        action,
        current,
        `${tool.name} failed with an unknown outcome: ${describe(error)}`,
      );
    }
    if ('timedOut' in outcome) {
      return recoverAction(runner, action, current, `${tool.name} timed out after ${policy.timeoutMs} ms`);
    }
    return { status: 'SUCCESS', result: outcome.value, via: 'execute' };
  }
}

/**
 * Recovers an action whose call may or may not have happened (a time-out, an unknown error, or a PENDING
 * action found after a crash). `attemptsSoFar` calls were already made with its key.
 */
export async function recoverAction(
  runner: ActionRunner,
  action: Action,
  attemptsSoFar: number,
  why: string,
): Promise<ToolOutcome> {
  const { tool, policy } = runner;
  annotate({ 'agentstate.action.attempt': attemptsSoFar });
  if (tool.lookup === undefined) {
    annotate({ 'agentstate.action.lookup': 'none' });
    return { status: 'UNKNOWN', note: `${why}; ${tool.name} has no lookup to check it` };
  }
  let found: Awaited<ReturnType<NonNullable<Tool['lookup']>>>;
  try {
    const answer = await withTimeout(policy.timeoutMs, () => tool.lookup!(action.idempotency_key));
    if ('timedOut' in answer) {
      annotate({ 'agentstate.action.lookup': 'timed_out' });
      return { status: 'UNKNOWN', note: `${why}; the lookup timed out too` };
    }
    found = answer.value;
  } catch (error) {
    annotate({ 'agentstate.action.lookup': 'failed' });
    return { status: 'UNKNOWN', note: `${why}; the lookup failed: ${describe(error)}` };
  }
  const lookedUp = found.found === true ? 'found' : found.found === 'ambiguous' ? 'ambiguous' : 'not_found';
  annotate({ 'agentstate.action.lookup': lookedUp });
  if (found.found === true) return { status: 'SUCCESS', result: found.result, via: 'lookup' };
  if (found.found === 'ambiguous')
    return { status: 'UNKNOWN', note: `${why}; lookup is ambiguous: ${found.reason}` };
  if (attemptsSoFar >= policy.maxAttempts) {
    return {
      status: 'FAILED',
      code: 'not_done',
      message: `${tool.name} was not done after ${attemptsSoFar} attempts (${why})`,
    };
  }
  if (attemptsSoFar > 0) await sleep(backoff(policy, attemptsSoFar));
  await runner.store.recordAttempt(runner.scope, action.id);
  return executeAction(runner, action, attemptsSoFar + 1);
}
