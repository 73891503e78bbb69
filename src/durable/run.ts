/**
 * `durableRun`: runs code as a durable run of a session, or continues the session's interrupted one.
 *
 * Under the session's lease (the one the agent runtime takes: two runs of a session never go at once), it
 * finds the session's open run of the given name (or the run the caller's `key` names), reads its journal
 * from its latest checkpoint, and runs the code again over it: recorded values are replayed, the rest is
 * produced and recorded. A run is a task of the session while it is open (EXECUTING), DONE with its result
 * or FAILED with its error after; its actions belong to that task.
 */
import { systemClock } from '../core/clock.js';
import { AgentStateError, invalidRequest, isAgentStateError, sessionNotFound } from '../core/errors.js';
import { assertPlainJson, type JsonObject, type JsonValue } from '../core/json.js';
import type { Task } from '../core/model.js';
import { pruneCompletedRun } from '../lifecycle/prune.js';
import { inSpan, linksTo, type Span, traceparentOf } from '../observability/tracing.js';
import { DEFAULT_RETRY } from '../runtime/actions.js';
import { DEFAULT_LEASE_TTL_MS, defaultLeaseOwner, leaseWithSession } from '../runtime/lease.js';
import { RunContext } from '../runtime/run-context.js';
import { RunEventLog } from '../runtime/run-events.js';
import type { NewRunEvent, Scope, StateStore } from '../store/types.js';
import { type Codec, codecIn, decodeRecorded, jsonCodec, type MaybeTyped, roundTrip } from './codec.js';
import { checkName, DurableRunContext } from './context.js';
import { type DurableHeader, isRunTask, keyedTaskId, newHeader, readRun } from './header.js';
import { ActionFailedError, type Pause, RunPaused } from './signals.js';
import type { DurableContext, DurableResult, DurableRunOptions, TypedRunOptions } from './types.js';

export const DEFAULT_RUN_NAME = 'durable';
export const DEFAULT_KEEP_DURABLE_CHECKPOINTS = 20;

type RunOptions<R> = DurableRunOptions & { readonly result?: MaybeTyped<R> };

function checkOptions<R>(options: RunOptions<R>): { name: string; key: string | null; keep: number | false } {
  if (options === null || typeof options !== 'object')
    throw invalidRequest('durableRun: options must be an object');
  const { scope, sessionId } = options;
  if (
    scope === null ||
    typeof scope !== 'object' ||
    typeof scope.tenant_id !== 'string' ||
    typeof scope.user_id !== 'string'
  ) {
    throw invalidRequest('scope: must be { tenant_id, user_id } with two strings');
  }
  if (typeof sessionId !== 'string' || sessionId.length === 0)
    throw invalidRequest('sessionId: must be a string');
  const name = checkName(options.name ?? DEFAULT_RUN_NAME, 'name');
  const key = options.key === undefined ? null : checkName(options.key, 'key');
  if (options.input !== undefined) assertPlainJson(options.input, 'input');
  const keep = options.keepCheckpoints ?? DEFAULT_KEEP_DURABLE_CHECKPOINTS;
  if (keep !== false && (!Number.isInteger(keep) || keep < 1))
    throw invalidRequest(`keepCheckpoints: must be a positive whole number or false, got ${String(keep)}`);
  return { name, key, keep };
}

/** The task of the run to continue or to answer: the one `key` names, else the session's oldest open one. */
async function findTask(
  store: StateStore,
  scope: Scope,
  sessionId: string,
  name: string,
  key: string | null,
): Promise<Task | null> {
  if (key !== null) {
    const task = await store.getTask(scope, keyedTaskId(scope, sessionId, name, key));
    if (task !== null && !isRunTask(task))
      throw new AgentStateError('conflict', `task ${task.id} exists and is not a durable run`);
    return task;
  }
  const open = await store.listTasks(scope, {
    session_id: sessionId,
    type: name,
    state: 'EXECUTING',
    limit: 50,
  });
  return open.items.filter(isRunTask).at(-1) ?? null;
}

function errorOf(data: JsonObject): { code: string; message: string } {
  const error = data.error;
  if (error !== null && typeof error === 'object' && !Array.isArray(error)) {
    return { code: String(error.code ?? 'failed'), message: String(error.message ?? 'the run failed') };
  }
  return { code: 'failed', message: 'the run failed' };
}

/** The answer for a run that is over, read from its task. */
function finished<R>(task: Task, codec: Codec<R>, runId: string): DurableResult<R> {
  const base = { run_id: runId, task_id: task.id, resumed: false, input_used: false };
  if (task.state === 'DONE') {
    const value = decodeRecorded(codec, task.data.result ?? null, 'the run result');
    return { ...base, status: 'done', value };
  }
  if (task.state === 'CANCELLED') {
    return { ...base, status: 'failed', error: { code: 'cancelled', message: 'the run was cancelled' } };
  }
  return { ...base, status: 'failed', error: errorOf(task.data) };
}

/**
 * Runs `fn` as the session's durable run, or continues the run that was interrupted, and answers how it
 * stands: `done` with its result, `waiting` for input, `blocked` on an action a person must resolve, or
 * `failed` (the code threw; an `AgentStateError` is thrown instead, and the run stays open to continue).
 */
export function durableRun<R extends JsonValue>(
  store: StateStore,
  options: DurableRunOptions,
  fn: (ctx: DurableContext) => Promise<R>,
): Promise<DurableResult<R>>;
export function durableRun<R>(
  store: StateStore,
  options: TypedRunOptions<R>,
  fn: (ctx: DurableContext) => Promise<R>,
): Promise<DurableResult<R>>;
export async function durableRun<R>(
  store: StateStore,
  options: RunOptions<R>,
  fn: (ctx: DurableContext) => Promise<R>,
): Promise<DurableResult<R>> {
  const attributes = {
    'agentstate.session.id': String(options?.sessionId),
    'agentstate.run.name': String(options?.name ?? DEFAULT_RUN_NAME),
  };
  return inSpan('agentstate.durable_run', attributes, async (span) => {
    const result = await runDurable(store, options, fn, span);
    span.setAttributes({
      'agentstate.run.id': result.run_id,
      'agentstate.task.id': result.task_id,
      'agentstate.run.resumed': result.resumed,
      'agentstate.run.status': result.status,
    });
    return result;
  });
}

async function runDurable<R>(
  store: StateStore,
  options: RunOptions<R>,
  fn: (ctx: DurableContext) => Promise<R>,
  span: Span,
): Promise<DurableResult<R>> {
  const { name, key, keep } = checkOptions(options);
  if (typeof fn !== 'function') throw invalidRequest('durableRun: fn must be a function');
  // Only reached through the overload that requires R to be plain JSON when no result codec is given.
  const codec: Codec<R> = codecIn(options.result, 'result') ?? (jsonCodec() as Codec<R>);
  const { scope, sessionId } = options;
  const ttlMs = options.lease?.ttlMs ?? DEFAULT_LEASE_TTL_MS;
  const owner = options.lease?.owner ?? defaultLeaseOwner();
  const held = options.lease?.held;
  if (held !== undefined && (!held.held || held.name !== `session:${sessionId}`))
    throw invalidRequest(`lease.held: must be the lease of session ${sessionId}, still held`);
  // The lease with the session, one store call (one statement on PostgreSQL); a lease the caller holds
  // already, with a read of the session under it.
  const { lease, session } =
    held === undefined
      ? await leaseWithSession(store, scope, sessionId, { owner, ttlMs, waitMs: options.lease?.waitMs ?? 0 })
      : { lease: held, session: await store.getSession(scope, sessionId) };
  try {
    if (session === null) throw sessionNotFound(sessionId);
    if (session.status === 'ended')
      throw invalidRequest(`session ${sessionId} has ended; start a new session`);
    const task = await findTask(store, scope, sessionId, name, key);
    let header: DurableHeader;
    let journal: Awaited<ReturnType<typeof readRun>>['journal'] = [];
    let input: { value: JsonValue } | null = options.input === undefined ? null : { value: options.input };
    if (task !== null && task.state !== 'EXECUTING') {
      return finished(task, codec, String(task.data.run_id));
    }
    if (task !== null) {
      const run = await readRun(store, scope, task);
      ({ header, journal } = run);
      // The attempt this one continues (the one that wrote the run's latest checkpoint).
      for (const link of linksTo(run.traceparent, 'resumes')) span.addLink(link);
      const waiting = task.data.waiting;
      const waits = waiting !== undefined && waiting !== null && typeof waiting === 'object';
      if (waits && input === null) {
        const prompt = !Array.isArray(waiting) && typeof waiting.prompt === 'string' ? waiting.prompt : null;
        const base = { run_id: header.run_id, task_id: task.id, resumed: false, input_used: false };
        return { ...base, status: 'waiting', prompt };
      }
      if (!waits && options.inputToInterrupted !== true) input = null;
    } else {
      header = newHeader(
        sessionId,
        name,
        key,
        key === null ? null : keyedTaskId(scope, sessionId, name, key),
      );
    }
    const rt = new RunContext<DurableHeader>(
      store,
      scope,
      header,
      options.clock ?? systemClock,
      journal,
      () => lease.renew(),
    );
    rt.traceparent = traceparentOf(span);
    if (options.eventLog !== undefined) {
      // Another run's log (a turn's): this run's events go into it, which starts and ends it itself.
      rt.events = options.eventLog;
    } else {
      const log = new RunEventLog(store, scope, sessionId, header.run_id, options.events);
      rt.events = log;
      log.add('run.started', {
        run_id: header.run_id,
        session_id: sessionId,
        name: header.name,
        resumed: journal.length > 0,
      });
      rt.finalLabels = ['done', 'failed', 'waiting'];
      rt.finalEvent = (_written, _extra, _checkpoint, label) =>
        finalEventOf(label, header.run_id, header.task_id);
    }
    const ctx = new DurableRunContext(
      rt,
      { policy: { ...DEFAULT_RETRY, ...options.retry }, waitingTtlSeconds: options.waitingTtlSeconds, input },
      { taskId: header.task_id, name: header.name, key: header.key },
    );
    const base = () => ({
      run_id: header.run_id,
      task_id: header.task_id,
      resumed: journal.length > 0,
      input_used: ctx.inputUsed,
    });
    await ctx.start();
    try {
      return await runCode(ctx, rt, fn, codec, base, keep);
    } finally {
      ctx.close();
    }
  } finally {
    if (held === undefined) await lease.release();
  }
}

/** Runs the code over the context and writes how it ended. */
async function runCode<R>(
  ctx: DurableRunContext,
  rt: RunContext<DurableHeader>,
  fn: (ctx: DurableContext) => Promise<R>,
  codec: Codec<R>,
  base: () => Base,
  keep: number | false,
): Promise<DurableResult<R>> {
  const { store, scope } = rt;
  const runId = rt.header.run_id;
  let value: R;
  try {
    value = await fn(ctx);
  } catch (error) {
    await rt.settle().catch(() => undefined);
    const pause = ctx.pause ?? (error instanceof RunPaused ? error.pause : null);
    if (pause !== null) return paused(pause, base());
    if (isAgentStateError(error)) throw error;
    const failure = {
      code: error instanceof ActionFailedError ? error.code : 'error',
      message: error instanceof Error ? error.message : String(error),
    };
    await ctx.finish({ error: failure });
    await prune(store, scope, runId, keep);
    return { ...base(), status: 'failed', error: failure };
  }
  // Code that caught the pause and returned anyway: the run is paused all the same.
  if (ctx.pause !== null) return paused(ctx.pause, base());
  const result = roundTrip(codec, value, 'the run result');
  await ctx.finish({ result: result.json });
  await prune(store, scope, runId, keep);
  return { ...base(), status: 'done', value: result.value };
}

type Base = { run_id: string; task_id: string; resumed: boolean; input_used: boolean };

/**
 * The event a durable run's attempt ends with, written in its last commit: `run.completed` or `run.failed`
 * with the run's task, whose data holds the result or the error; `run.waiting` when it waits for input (the
 * same run continues when the input comes).
 */
function finalEventOf(label: string, runId: string, taskId: string): NewRunEvent {
  const data = { run_id: runId, task_id: taskId };
  if (label === 'done') return { type: 'run.completed', data: { ...data, status: 'done' } };
  if (label === 'failed') return { type: 'run.failed', data: { ...data, status: 'failed' } };
  return { type: 'run.waiting', data: { ...data, status: 'waiting' } };
}

/** The answer of a paused run; input its code refused is the caller's error (the run keeps waiting). */
function paused<R>(pause: Pause, base: Base): DurableResult<R> {
  if (pause.kind === 'blocked')
    return { ...base, status: 'blocked', action_id: pause.actionId, note: pause.note };
  if (pause.invalid !== null) throw pause.invalid;
  return { ...base, status: 'waiting', prompt: pause.prompt };
}

async function prune(store: StateStore, scope: Scope, runId: string, keep: number | false): Promise<void> {
  if (keep !== false) await pruneCompletedRun(store, scope, runId, keep);
}
