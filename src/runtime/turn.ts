import { type Clock, systemClock } from '../core/clock.js';
import { invalidRequest } from '../core/errors.js';
import type { Action, Checkpoint, Session, Task } from '../core/model.js';
import { pruneCompletedRun } from '../lifecycle/prune.js';
import type { ModelRegistry } from '../models/types.js';
import { inSpan, linksTo, traceparentOf } from '../observability/tracing.js';
import type { Scope, StateStore } from '../store/types.js';
import { DEFAULT_RETRY, type RetryPolicy } from './actions.js';
import type { AgentRegistry } from './agent.js';
import { type AnswerParts, answerOf, type TurnOutput } from './answer.js';
import { CancelWatch, cancelledError, RunCancelled } from './cancel.js';
import { type ContextOptions, compactAfterTurn, compactionNeeded, compactionSettled } from './compaction.js';
import { DEFAULT_CONTEXT_MAX_TOKENS } from './conversation.js';
import type { JournalEntry } from './journal.js';
import type { HeldLease } from './lease.js';
import { type ProgramResult, runProgram } from './program.js';
import { RunContext, type RunHeader } from './run-context.js';
import { endCancelled, failed } from './run-endings.js';
import { RunEventLog, type RunEventLogOptions } from './run-events.js';
import { markRunForRecovery, type RunRecoveryOptions } from './run-marks.js';
import { markLocalRun } from './run-notify.js';
import { runSettingsOf } from './run-settings.js';
import { findRun } from './runs.js';
import type { ToolRegistry } from './tool.js';
import { type AnswerReads, collect, finalAnswer, lastRunAnswer, readForAnswer } from './turn-answers.js';
import { headerOf, journalOf, underLeaseAgain, withLease, withLeasedHead } from './turn-lease.js';

export { runIdFor } from './runs.js';

export const MAX_INPUT_LENGTH = 8_000;

export interface RuntimeOptions {
  readonly store: StateStore;
  readonly scope: Scope;
  readonly sessionId: string;
  readonly agents: AgentRegistry;
  readonly models: ModelRegistry;
  readonly tools: ToolRegistry;
  /** Default: the system clock. Read once per run and recorded. */
  readonly clock?: Clock;
  /** The agent when the session names none. */
  readonly agent?: string;
  /** Model name in `models`. Default 'rules'. */
  readonly model?: string;
  /** Time zone when the session's context has no `timezone`. Default 'UTC'. */
  readonly timezone?: string;
  readonly retry?: Partial<RetryPolicy>;
  /** The conversation built for models that use one, and compaction after each turn. */
  readonly context?: ContextOptions;
  /**
   * The session's run lease: owner (default pid + random), TTL in ms (default 10000; renewed every third of
   * it while the run lasts), and how long to wait for a lease another process holds (default 0: a `conflict`
   * at once). A resumer after a crash waits at most one TTL for the dead owner's lease to run out.
   */
  readonly lease?: { readonly owner?: string; readonly ttlMs?: number; readonly waitMs?: number };
  /** How the run's streamed text is merged into `message.delta` events (run-events.ts). */
  readonly events?: RunEventLogOptions;
  /**
   * Called when the run starts, with its id: a caller that streams the run starts following its events from
   * here. The `run.started` event is stored with the run's first write (its final commit, for a run that
   * stores nothing before; at the latest ~50 ms in, see run-context.ts `commit`).
   */
  readonly onRun?: (runId: string) => void;
  /**
   * Checkpoints kept of a run once it completes (its last ones, to see how it ended); the rest of its history
   * and the blobs only they needed are deleted. Default 20; `false` keeps them all.
   */
  readonly keepCheckpoints?: number | false;
  /**
   * The server instance running the runtime: its runs that reach a tool call are marked in the store until
   * they complete, so a recovery sweeper finds them if this process dies (run-marks.ts), and the session
   * leases name the instance. Default: none (no marks).
   */
  readonly recovery?: RunRecoveryOptions;
  /**
   * How long the run's start checkpoint waits for the run's first commit that stores something, which then
   * carries it (one write fewer), before it is written on its own (ms, a whole number up to an hour; default
   * 50). A longer wait saves that write in more runs; a process killed meanwhile leaves the run unstarted,
   * as if it had not begun (run-context.ts `commitLater`).
   */
  readonly checkpointDeferMs?: number;
  /**
   * How often, at most, the run reads the store at its safe points for a cancel asked from another process
   * (ms, a whole number up to an hour; default 250). A cancel asked in this process is seen at once.
   */
  readonly cancelCheckMs?: number;
}

export interface TurnRequest extends RuntimeOptions {
  readonly input: string;
  /**
   * The request's idempotency key (HTTP `Idempotency-Key`): kept on the turn's messages, so a retry whose
   * answer was lost after the turn committed (the server died before answering) gets that turn's answer
   * instead of running the input again.
   */
  readonly requestKey?: string;
}

export type { TurnOutput } from './answer.js';

/** One attempt of a run, in its span (`agentstate.run`), linked to the attempt it resumes when traced. */
function execute(
  options: RuntimeOptions,
  lease: HeldLease,
  header: RunHeader,
  recorded: readonly JournalEntry[],
  session: Session | null = null,
  lastSeq: number | null = null,
  last = false,
  openTasks: readonly Task[] | null = null,
  /** The checkpoint an interrupted attempt left (its metadata names that attempt's span). */
  interrupted: Checkpoint | null = null,
): Promise<TurnOutput> {
  const attributes = {
    'agentstate.session.id': header.session_id,
    'agentstate.run.id': header.run_id,
    'agentstate.agent': header.agent,
    'agentstate.model': header.model,
    'agentstate.run.resumed': recorded.length > 0,
  };
  const links = linksTo(interrupted?.metadata.traceparent, 'resumes');
  return inSpan(
    'agentstate.run',
    attributes,
    async (span) => {
      const output = await executeRun(options, lease, header, recorded, session, lastSeq, last, openTasks);
      span.setAttribute(
        'agentstate.task.ids',
        output.tasks.map((task) => task.id),
      );
      span.setAttribute(
        'agentstate.task.types',
        output.tasks.map((task) => task.type),
      );
      return output;
    },
    { links },
  );
}

async function executeRun(
  options: RuntimeOptions,
  lease: HeldLease,
  header: RunHeader,
  recorded: readonly JournalEntry[],
  session: Session | null = null,
  /** For a fresh run: the seq of the session's last message when it started (under the lease). */
  lastSeq: number | null = null,
  /** The run is the last under this lease: its final commit frees it (a round trip fewer). */
  last = false,
  /** The user's open tasks read with `session` under the lease, when they were. */
  openTasks: readonly Task[] | null = null,
): Promise<TurnOutput> {
  const agent = options.agents.get(header.agent);
  if (agent === undefined)
    throw invalidRequest(`agent ${JSON.stringify(header.agent)} is not in the agent registry`);
  const { keep, timezone, deferMs, cancelCheckMs } = runSettingsOf(options);
  const model = options.models.get(header.model);
  if (model === undefined)
    throw invalidRequest(`model ${JSON.stringify(header.model)} is not in the model registry`);
  const rt = new RunContext(
    options.store,
    options.scope,
    header,
    options.clock ?? systemClock,
    recorded,
    () => lease.renew(),
  );
  rt.deferMs = deferMs;
  if (last) rt.freeWithFinalCommit = lease;
  rt.traceparent = traceparentOf();
  const resumed = recorded.length > 0;
  const mark =
    options.recovery === undefined
      ? null
      : markRunForRecovery({
          ...options,
          recovery: options.recovery,
          header,
          owner: lease.owner,
          resumed,
        });
  rt.marks = mark;
  const log = new RunEventLog(options.store, options.scope, header.session_id, header.run_id, options.events);
  rt.events = log;
  log.add('run.started', {
    run_id: header.run_id,
    session_id: header.session_id,
    agent: header.agent,
    model: header.model,
    resumed,
  });
  options.onRun?.(header.run_id);
  const heard = markLocalRun(header.session_id, header.run_id);
  const watch = new CancelWatch(
    options.store,
    options.scope,
    header.session_id,
    header.run_id,
    cancelCheckMs,
  );
  rt.cancel = watch;
  let answer: TurnOutput | null = null;
  const known: AnswerReads = {
    openBefore: openTasks,
    tasks: new Map<string, Task>(),
    actions: new Map<string, Action>(),
    // The session read under the lease when the run started (a fresh run), for a final commit without it.
    session,
  };
  rt.beforeFinal = (extra, batch) => readForAnswer(options, rt, extra, batch, known);
  rt.finalEvent = (written, extra, checkpointId) => {
    const parts: AnswerParts = {
      runId: header.run_id,
      sessionId: header.session_id,
      model: header.model,
      resumed,
      output: extra.output as unknown as AnswerParts['output'],
      checkpointId,
      tasks: new Map([...known.tasks, ...rt.written.tasks]),
      actions: known.actions,
      openBefore: known.openBefore ?? [],
      session: known.session,
    };
    answer = answerOf(parts, written);
    return { type: 'run.completed', data: JSON.parse(JSON.stringify(answer)) };
  };
  let output: ProgramResult;
  try {
    output = await runProgram(rt, {
      agent,
      model,
      tools: options.tools,
      policy: { ...DEFAULT_RETRY, ...options.retry },
      timezone,
      contextMaxTokens: options.context?.maxTokens ?? DEFAULT_CONTEXT_MAX_TOKENS,
      session,
      openTasks,
      lease,
    });
  } catch (error) {
    // A deferred checkpoint still in flight lands before the lease is let go; the run's own error is the
    // one reported (the write's, if it failed too, is what the next attempt finds).
    await rt.settle().catch(() => undefined);
    if (error instanceof RunCancelled) {
      await endCancelled(rt, header);
      throw cancelledError(header.session_id, header.run_id);
    }
    await failed(log, error);
    throw error;
  } finally {
    watch.done();
    heard();
  }
  await rt.settle(); // the final commit waited for it already: no write of the run is left in flight
  await mark?.completed();
  const after = output.final.session;
  const growth = lastSeq === null ? null : { fromSeq: lastSeq, appended: rt.appended };
  const { store, scope } = options;
  if (lease.held) {
    await compactAfterTurn(store, scope, header.session_id, options.context, after, growth);
  } else if (
    !compactionSettled(store, scope, header.session_id, options.context, after, growth) &&
    (await compactionNeeded(store, scope, header.session_id, options.context, after, growth))
  ) {
    // The final commit freed the lease, and compaction writes only under it: take it again, now or not at
    // all (a run of the session that holds it checks after its own commit, and finds what this one added),
    // and decide again under it (a run may have compacted since the check).
    await underLeaseAgain(options, lease.owner, () =>
      compactAfterTurn(store, scope, header.session_id, options.context, after, growth),
    );
  }
  // A run with no more checkpoints than are kept has nothing to prune (most turns write 2 to 5).
  if (keep !== false && rt.checkpointCount > keep)
    await pruneCompletedRun(options.store, options.scope, header.run_id, keep);
  if (answer !== null) return answer;
  // The final commit was replayed: its event holds the answer as it was written.
  return (
    (await finalAnswer(options, header.run_id)) ??
    collect(options, header.run_id, output, resumed, output.final)
  );
}

/**
 * Runs one turn. An interrupted run of the session is finished first; when it had the same input (a client
 * retrying after a lost answer), its output is the answer and the input is not run twice.
 */
export function runTurn(request: TurnRequest): Promise<TurnOutput> {
  const attributes = { 'agentstate.session.id': String(request.sessionId) };
  return inSpan('agentstate.turn', attributes, async (span) => {
    const output = await runTurnNow(request);
    span.setAttribute('agentstate.run.id', output.run_id);
    span.setAttribute('agentstate.run.resumed', output.resumed);
    return output;
  });
}

async function runTurnNow(request: TurnRequest): Promise<TurnOutput> {
  const { input } = request;
  if (typeof input !== 'string' || input.trim().length === 0)
    throw invalidRequest('input: must be a non-empty string');
  if (input.length > MAX_INPUT_LENGTH)
    throw invalidRequest(`input: longer than ${MAX_INPUT_LENGTH} characters`);
  // The lease taken with the session and the user's open tasks: the new run starts from them (one read).
  return withLeasedHead(request, async (lease, pending) => {
    if (pending.checkpoint !== null) {
      const header = headerOf(pending.checkpoint);
      const journal = journalOf(pending.checkpoint);
      // The interrupted run answers this turn only when it had the same input.
      const { onRun: _onRun, ...others } = request;
      const finished = await execute(
        header.input === input ? request : others,
        lease,
        header,
        journal,
        null,
        null,
        false,
        null,
        pending.checkpoint,
      );
      if (header.input === input) return finished;
    }
    const { requestKey } = request;
    if (pending.checkpoint === null && requestKey !== undefined && pending.lastRequestKey === requestKey) {
      const answered = pending.lastRunId === null ? null : await lastRunAnswer(request, pending.lastRunId);
      if (answered !== null) {
        request.onRun?.(answered.run_id);
        return answered;
      }
    }
    const fresh =
      pending.checkpoint === null
        ? pending
        : await findRun(request.store, request.scope, request.sessionId, true);
    const agent = fresh.session.agent ?? request.agent;
    if (agent === undefined || agent === null) {
      throw invalidRequest(`session ${request.sessionId} names no agent; pass one`);
    }
    const header: RunHeader = {
      run_id: fresh.runId,
      session_id: request.sessionId,
      agent,
      model: request.model ?? 'rules',
      input,
      ...(requestKey === undefined ? {} : { request_key: requestKey }),
    };
    return execute(request, lease, header, [], fresh.session, fresh.lastSeq, true, fresh.openTasks);
  });
}

/**
 * Continues the session's interrupted run from its latest checkpoint (same session id). When no run is
 * interrupted, returns the output of the last finished run, or null when the session has had none.
 */
export function resumeRun(options: RuntimeOptions): Promise<TurnOutput | null> {
  const attributes = { 'agentstate.session.id': String(options.sessionId) };
  return inSpan('agentstate.resume', attributes, () => resumeNow(options));
}

async function resumeNow(options: RuntimeOptions): Promise<TurnOutput | null> {
  return withLease(options, async (lease) => {
    const pending = await findRun(options.store, options.scope, options.sessionId);
    if (pending.checkpoint !== null) {
      return execute(
        options,
        lease,
        headerOf(pending.checkpoint),
        journalOf(pending.checkpoint),
        null,
        null,
        true,
        null,
        pending.checkpoint,
      );
    }
    if (pending.lastRunId === null) return null;
    return lastRunAnswer(options, pending.lastRunId);
  });
}
