/**
 * A turn's answer, where the run's final event is not what builds it: what the final commit's answer reads
 * before it (readForAnswer), the answer of a finished run given again (its final event, else its last
 * checkpoint), and the answer rebuilt from the store (`collect`).
 */
import { sessionNotFound } from '../core/errors.js';
import type { JsonObject } from '../core/json.js';
import { type Action, OPEN_TASK_STATES, type Session, type Task } from '../core/model.js';
import type { AnswerParts, TurnOutput } from './answer.js';
import { ANSWER_OPEN_TASKS, type RunOutput } from './program.js';
import type { CommitBatch, CommitResult, RunContext } from './run-context.js';
import { lastRunEvent } from './run-events.js';
import type { RuntimeOptions } from './turn.js';

/** What the answer needs besides the final commit, read before it (readForAnswer). */
export interface AnswerReads {
  openBefore: readonly Task[] | null;
  readonly tasks: Map<string, Task>;
  readonly actions: Map<string, Action>;
  session: Session | null;
}

/**
 * Reads what the run's answer needs that its final commit does not write, before that commit: the open
 * tasks when the run did not read them with its session, tasks it touched but never wrote, and its actions
 * (an action changes outside the run's commits too: attempts, a lookup's UNKNOWN).
 */
export async function readForAnswer(
  options: RuntimeOptions,
  rt: RunContext,
  extra: JsonObject,
  batch: CommitBatch,
  known: AnswerReads,
): Promise<void> {
  const { store, scope, sessionId } = options;
  // A final commit that writes neither the session nor its messages does not answer with it: read it.
  if (batch.session === undefined && batch.messages === undefined)
    known.session = await store.getSession(scope, sessionId);
  const output = extra.output as unknown as AnswerParts['output'];
  if (known.openBefore === null) {
    const open = await store.listTasks(scope, {
      session_id: sessionId,
      state: OPEN_TASK_STATES,
      limit: ANSWER_OPEN_TASKS,
    });
    known.openBefore = open.items;
  }
  const listed = new Set(known.openBefore.map((task) => task.id));
  const writes = new Set([
    ...(batch.update_tasks ?? []).map((u) => u.id),
    ...(batch.create_tasks ?? []).flatMap((t) => (t.id === undefined ? [] : [t.id])),
  ]);
  for (const id of output.task_ids) {
    if (writes.has(id) || rt.written.tasks.has(id) || listed.has(id)) continue;
    const task = await store.getTask(scope, id);
    if (task !== null) known.tasks.set(id, task);
  }
  const completes = new Set((batch.complete_actions ?? []).map((a) => a.id));
  for (const id of output.action_ids) {
    if (completes.has(id)) continue;
    const action = await store.getAction(scope, id);
    if (action !== null) known.actions.set(id, action);
  }
  for (const task of known.openBefore) if (!known.tasks.has(task.id)) known.tasks.set(task.id, task);
}

/** The answer a run's final event holds, when the run has one (its log is kept for an hour). */
export async function finalAnswer(options: RuntimeOptions, runId: string): Promise<TurnOutput | null> {
  const last = await lastRunEvent(options.store, options.scope, options.sessionId, runId);
  return last?.type === 'run.completed' ? (last.data as unknown as TurnOutput) : null;
}

/**
 * The turn's records as they are now, for the caller. What the run's final commit wrote (`final`: the
 * session and the tasks of its batch) is as it is now, since nothing of the run writes them after it; the
 * rest is read.
 */
export async function collect(
  options: RuntimeOptions,
  runId: string,
  output: RunOutput,
  resumed: boolean,
  final: CommitResult | null = null,
): Promise<TurnOutput> {
  const { store, scope, sessionId } = options;
  const session = final?.session?.id === sessionId ? final.session : await store.getSession(scope, sessionId);
  if (session === null) throw sessionNotFound(sessionId);
  // The final commit listed them as it left them; a run resumed after it (or replayed) reads them.
  const open =
    final?.open_tasks ??
    (
      await store.listTasks(scope, {
        session_id: sessionId,
        state: OPEN_TASK_STATES,
        limit: ANSWER_OPEN_TASKS,
      })
    ).items;
  const known = new Map<string, Task>();
  for (const task of open) known.set(task.id, task);
  // The newer copy of each: the list read now, or what the final commit wrote (a PATCH may come between).
  for (const task of final?.tasks ?? []) {
    const listed = known.get(task.id);
    if (listed === undefined || listed.version < task.version) known.set(task.id, task);
  }
  const tasks: Task[] = [];
  for (const id of output.task_ids) {
    const task = known.get(id) ?? (await store.getTask(scope, id));
    if (task !== null) tasks.push(task);
  }
  for (const task of open) if (!output.task_ids.includes(task.id)) tasks.push(task);
  // An action the final commit wrote is as that commit left it; any other is read.
  const written = new Map((final?.actions ?? []).map((action) => [action.id, action]));
  const actions: Action[] = [];
  for (const id of output.action_ids) {
    const action = written.get(id) ?? (await store.getAction(scope, id));
    if (action !== null) actions.push(action);
  }
  return {
    run_id: runId,
    reply: output.reply,
    language: output.language,
    session,
    tasks,
    actions,
    checkpoint_id: output.checkpoint_id,
    resumed,
  };
}

/**
 * The answer of a finished run, given again (`resumed` false: nothing was continued by this call): its
 * final event while it is kept, else rebuilt from its last checkpoint.
 */
export async function lastRunAnswer(options: RuntimeOptions, runId: string): Promise<TurnOutput | null> {
  const final = await finalAnswer(options, runId);
  if (final !== null) return { ...final, resumed: false };
  const last = await options.store.latestCheckpoint(options.scope, runId);
  const output = last?.channels.output as unknown as Omit<RunOutput, 'checkpoint_id'> | undefined;
  if (last === null || output === undefined || typeof output.reply !== 'string') return null;
  return collect(options, runId, { ...output, checkpoint_id: last.id }, false);
}
