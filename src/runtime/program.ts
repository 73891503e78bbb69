/**
 * One turn as a deterministic program over a RunContext: load, route, extract, merge slots, advance the
 * state machine, execute, reply, commit. Every non-deterministic value goes through `rt.read` and every
 * write through `rt.commit`, so running it again over a recorded journal replays the interrupted run.
 */

import { isoAt } from '../core/clock.js';
import { AgentStateError } from '../core/errors.js';
import { newId } from '../core/ids.js';
import type { JsonValue } from '../core/json.js';
import type { Action, Session, Task, TaskState } from '../core/model.js';
import { todayIn } from '../models/rules/dates.js';
import type { Extraction, Language, Model, OpenTaskInfo, RouteDecision } from '../models/types.js';
import type { NewMemory } from '../store/types.js';
import type { RetryPolicy } from './actions.js';
import { type Agent, taskTypeOf } from './agent.js';
import { conversationFor } from './conversation.js';
import { executeTask, type FinalWrite } from './execute.js';
import { commitFinal, sessionMove, turnMessages } from './final-commit.js';
import { runKernelProgram } from './kernel-program.js';
import type { HeldLease } from './lease.js';
import { chooseLanguage, chooseTimezone } from './locale.js';
import { outcomeMemory } from './memory-link.js';
import { modelCall } from './model-call.js';
import { nothingText } from './replies.js';
import { type RouteOutcome, routeByRules } from './router.js';
import type { CommitBatch, CommitResult, RunContext } from './run-context.js';
import { loadSnapshot, openTaskInfo, type Snapshot } from './snapshot.js';
import type { Reaction } from './state-machine.js';
import { advanceTarget, expectingOf, type PendingTransition, type Write } from './target.js';
import { taskTypeInfo } from './task-type.js';
import type { ToolRegistry } from './tool.js';
import { runToolProgram, usesTools } from './tool-program.js';

export interface ProgramEnv {
  readonly agent: Agent;
  /** The session as the turn read it under its lease, if it did: the snapshot starts from it. */
  readonly session?: Session | null;
  /** The user's open tasks read with `session` (getSessionHead's open_tasks), if they were. */
  readonly openTasks?: readonly Task[] | null;
  readonly model: Model;
  readonly tools: ToolRegistry;
  readonly policy: RetryPolicy;
  /** The time zone when the session's context names none. */
  readonly timezone: string;
  /** Token budget of the conversation built for models that use one (`buildContext`). */
  readonly contextMaxTokens: number;
  /** The session's lease the turn holds (an agent's code runs under it). */
  readonly lease?: HeldLease;
}

/** Open tasks of the session a turn's answer lists at most. */
export const ANSWER_OPEN_TASKS = 100;

/** What the final checkpoint keeps as the run's output. */
export interface RunOutput {
  readonly reply: string;
  readonly language: Language;
  readonly task_ids: string[];
  readonly action_ids: string[];
  readonly checkpoint_id: string;
}

/** The run's output with what its final commit wrote (the session, the tasks it created or updated). */
export interface ProgramResult extends RunOutput {
  readonly final: CommitResult;
}

const FILLING: readonly TaskState[] = ['INIT', 'COLLECTING', 'CONFIRMING'];

function json<T>(value: T): JsonValue {
  return value as unknown as JsonValue;
}

function byRecency(a: OpenTaskInfo, b: OpenTaskInfo): number {
  return b.updated_at.localeCompare(a.updated_at) || b.id.localeCompare(a.id);
}

function fromDecision(decision: RouteDecision, tasks: readonly OpenTaskInfo[], agent: Agent): RouteOutcome {
  if (decision.task_id !== null && tasks.some((task) => task.id === decision.task_id)) {
    return { kind: 'task', task_id: decision.task_id, reason: decision.reason };
  }
  if (decision.new_task_type !== null && taskTypeOf(agent, decision.new_task_type) !== undefined) {
    return { kind: 'new', type: decision.new_task_type, reason: decision.reason };
  }
  return { kind: 'none', reason: decision.reason };
}

export async function runProgram(rt: RunContext, env: ProgramEnv): Promise<ProgramResult> {
  const { agent, model } = env;
  if (agent.run !== undefined) {
    const { lease } = env;
    if (lease === undefined)
      throw new AgentStateError('internal', `agent ${agent.name}: its code needs the turn's lease`);
    return runKernelProgram(rt, { ...env, lease });
  }
  if (usesTools(agent, model)) return runToolProgram(rt, env);
  const { input, session_id: sessionId } = rt.header;
  const snap = (await rt.read('load', async () =>
    json(
      await loadSnapshot(rt.store, rt.scope, sessionId, agent, env.session ?? null, env.openTasks ?? null),
    ),
  )) as unknown as Snapshot;
  const nowMs = await rt.now();
  // Written only if the run stores something before its next commit with a batch (see `commitLater`).
  await rt.commitLater('start');

  const session = snap.session;
  const language = chooseLanguage(session.context, input);
  const timezone = chooseTimezone(session.context, env.timezone);
  const today = todayIn(nowMs, timezone);
  const infos = snap.tasks.map((task) => openTaskInfo(agent, task));
  const typeInfos = agent.taskTypes.map(taskTypeInfo);
  const focus = infos.filter((task) => FILLING.includes(task.state)).sort(byRecency)[0];
  const base = { input, now: isoAt(nowMs), timezone, language };
  const context = await conversationFor(rt, env, snap.tasks);
  const withContext = context === null ? {} : { context };

  const first = (await rt.read('model.extract', async () =>
    json(
      await modelCall(model, 'extract', () =>
        model.extract({ ...base, ...withContext, taskTypes: typeInfos, expecting: expectingOf(focus) }),
      ),
    ),
  )) as unknown as Extraction;
  let route = routeByRules(first, infos);
  if (route.kind === 'model') {
    const decision = (await rt.read('model.route', async () =>
      json(
        await modelCall(model, 'route', () =>
          model.route({ input, extraction: first, tasks: infos, taskTypes: typeInfos }),
        ),
      ),
    )) as unknown as RouteDecision;
    route = fromDecision(decision, infos, agent);
  }

  const parts: string[] = [];
  const writes: Write[] = [];
  const completions: NonNullable<FinalWrite['complete_action']>[] = [];
  /** Preferences the tasks made DONE here teach, by namespace and key (a later task's value wins). */
  const remembered = new Map<string, NewMemory>();
  const touched: string[] = [];
  const actions: Action[] = [];
  let reaction: Reaction | null = null;
  let targetId: string | null = null;
  let executing: Task | null = null;
  let transition: PendingTransition | null = null;
  let cancelled: string | null = null;

  const routed =
    route.kind === 'task' ? (snap.tasks.find((task) => task.id === route.task_id) ?? null) : null;
  const type = taskTypeOf(agent, routed?.type ?? (route.kind === 'new' ? route.type : ''));
  if (type !== undefined) {
    targetId = routed?.id ?? ((await rt.read('random', async () => newId('task'))) as string);
    touched.push(targetId);
    const info = infos.find((task) => task.id === targetId);
    const result = await advanceTarget(rt, {
      type,
      task: routed,
      taskId: targetId,
      info,
      extraction: first,
      focused: info === undefined || info.id === focus?.id,
      sessionId,
      model,
      base,
      today,
    });
    reaction = result.reaction;
    if (result.write !== null) writes.push(result.write);
    if (result.text !== null) parts.push(result.text);
    if (result.state === 'CANCELLED') cancelled = targetId;
    if (result.reaction.kind === 'execute') {
      executing = result.task;
      transition = result.transition;
    }
  } else {
    parts.push(
      nothingText(
        agent.greeting[language],
        infos.map((task) => task.status_line),
        language,
      ),
    );
  }

  // EXECUTING: tasks left executing by earlier turns (continued once their blocking action is resolved),
  // then the target if it was just confirmed.
  const running = snap.tasks.filter((task) => task.state === 'EXECUTING' && task.id !== cancelled);
  if (executing !== null) running.push(executing);
  for (const task of running) {
    const taskType = taskTypeOf(agent, task.type);
    if (taskType === undefined) continue;
    const report = await executeTask(
      rt,
      { tools: env.tools, policy: env.policy, language, sessionId },
      task,
      taskType,
      transition?.id === task.id ? transition : null,
    );
    actions.push(...report.actions);
    const isTarget = task.id === targetId;
    if (!touched.includes(task.id)) touched.push(task.id);
    const { write } = report;
    // What the user chose is remembered by the commit that marks the task DONE (see memory-link.ts).
    if (write.state === 'DONE') {
      for (const item of outcomeMemory(report.task)) remembered.set(`${item.namespace}\n${item.key}`, item);
    }
    if (write.complete_action !== null) completions.push(write.complete_action);
    const changedLine = write.status_line !== report.task.status_line || write.state !== null;
    if (changedLine) {
      writes.push({
        kind: 'update',
        id: report.task.id,
        expected_version: report.task.version,
        patch: {
          status_line: write.status_line,
          ...(write.state === null ? {} : { state: write.state, cause: write.cause }),
          ...(report.task.session_id === sessionId ? {} : { session_id: sessionId }),
        },
      });
    }
    if (isTarget || changedLine) parts.push(report.text);
  }

  const draft = parts.join('\n');
  const targetInfo = infos.find((task) => task.id === targetId) ?? null;
  const reply = (await rt.read('model.reply', async () =>
    json(
      await modelCall(model, 'reply', () =>
        model.reply({
          input,
          language,
          draft,
          task: targetInfo,
          ...withContext,
          ...(rt.events === null ? {} : { onDelta: (text: string) => rt.events?.delta(text) }),
        }),
      ),
    ),
  )) as string;
  const waiting = reaction !== null && ['ask', 'confirm', 'declined'].includes(reaction.kind);
  if (waiting) rt.events?.add('run.waiting', { task_id: targetId, reason: reaction?.kind ?? null });
  const status = waiting ? 'waiting_for_user' : 'active';
  const actionIds = [...new Set(actions.map((action) => action.id))];
  const output = { reply, language, task_ids: touched, action_ids: actionIds };
  const finalBatch = (current: Session): CommitBatch => ({
    ...sessionMove(current, status, agent.name),
    create_tasks: writes.flatMap((w) => (w.kind === 'create' ? [w.task] : [])),
    update_tasks: writes.flatMap((w) =>
      w.kind === 'update' ? [{ id: w.id, expected_version: w.expected_version, patch: w.patch }] : [],
    ),
    complete_actions: completions,
    ...(remembered.size === 0 ? {} : { put_memory: [...remembered.values()] }),
    // What the answer lists (turn.ts `collect`), as the commit leaves it: no read of its own after it.
    list_open_tasks: { session_id: sessionId, limit: ANSWER_OPEN_TASKS },
    messages: turnMessages(rt, reply, touched),
  });
  const committed = await commitFinal(rt, session, targetId, { output }, finalBatch);
  return { ...output, checkpoint_id: committed.checkpoint_id, final: committed };
}
