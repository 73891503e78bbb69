/**
 * One turn of an agent with tools on a model that calls tools: the model is asked in a loop, with the
 * conversation so far and the agent's tools (`runToolLoop`), until it answers in text. It runs on the
 * turn's own run context, so it is a turn like any other (its events stream, it resumes after a crash,
 * a retry with the same request key gets its answer) and through the durable kernel: each model answer
 * is recorded, and each tool call is an action with an idempotency key (recorded PENDING before the tool
 * runs, recovered through the tool's `lookup` after a crash, never run twice).
 *
 * The run's task (type `tool_loop`) is written with its first action: a turn that calls no tool writes
 * nothing but its messages, and a turn whose model fails writes nothing at all. The final commit marks
 * the task DONE, or leaves it EXECUTING when an action's outcome is unknown (a person resolves it).
 */

import { registryAgentTools } from '../agents/registry-tools.js';
import {
  runToolLoop,
  type ToolCaller,
  type ToolCallRecord,
  ToolLoopExhausted,
  type ToolLoopResult,
} from '../agents/tool-loop.js';
import { isoAt } from '../core/clock.js';
import { AgentStateError } from '../core/errors.js';
import { newId } from '../core/ids.js';
import type { JsonObject, JsonValue } from '../core/json.js';
import type { Session, Task } from '../core/model.js';
import { DurableRunContext } from '../durable/context.js';
import { RunPaused } from '../durable/signals.js';
import type { Language, Model } from '../models/types.js';
import type { Agent } from './agent.js';
import { conversationFor } from './conversation.js';
import { commitFinal, sessionMove, turnMessages } from './final-commit.js';
import { chooseLanguage, chooseTimezone } from './locale.js';
import { modelCall } from './model-call.js';
import { ANSWER_OPEN_TASKS, type ProgramEnv, type ProgramResult } from './program.js';
import type { CommitBatch, RunContext } from './run-context.js';
import { loadSnapshot, type Snapshot } from './snapshot.js';

/** The type of the task that stands for a turn's tool loop. */
export const TOOL_LOOP_TASK = 'tool_loop';
/** Model answers a turn's loop asks for at most. */
export const TOOL_LOOP_MAX_STEPS = 8;

/** True when the turn is a tool loop: the agent names tools and its model calls tools. */
export function usesTools(agent: Agent, model: Model): boolean {
  return (agent.tools?.length ?? 0) > 0 && typeof model.chat === 'function';
}

function json<T>(value: T): JsonValue {
  return value as unknown as JsonValue;
}

function instructions(agent: Agent, nowMs: number, timezone: string, language: Language): string {
  return [
    `You are the ${agent.name} agent: ${agent.description}`,
    `Now is ${isoAt(nowMs)}; the user's time zone is ${timezone}. Write dates as YYYY-MM-DD.`,
    'Use the tools to act. Never claim an action happened unless its tool answered it did.',
    `Answer the user in ${language === 'zh' ? 'Chinese' : 'English'}.`,
  ].join('\n');
}

export async function runToolProgram(rt: RunContext, env: ProgramEnv): Promise<ProgramResult> {
  const { agent, model } = env;
  const { input, session_id: sessionId } = rt.header;
  const snap = (await rt.read('load', async () =>
    json(
      await loadSnapshot(rt.store, rt.scope, sessionId, agent, env.session ?? null, env.openTasks ?? null),
    ),
  )) as unknown as Snapshot;
  const nowMs = await rt.now();
  await rt.commitLater('start');
  const session: Session = snap.session;
  const language = chooseLanguage(session.context, input);
  const timezone = chooseTimezone(session.context, env.timezone);
  const context = await conversationFor(rt, env, snap.tasks);
  const taskId = (await rt.read('random', async () => newId('task'))) as string;

  const ctx = new DurableRunContext(
    rt,
    { policy: env.policy, waitingTtlSeconds: undefined, input: null },
    { taskId, name: TOOL_LOOP_TASK, key: null },
  );
  ctx.startWithFirstAction();
  const chat = model.chat?.bind(model);
  if (chat === undefined) throw new AgentStateError('internal', `model ${model.name} calls no tools`);
  // Each answer in its GenAI span (`chat <model>`), as the slot-filling program's calls are.
  const caller: ToolCaller = { chat: (request) => modelCall(model, 'chat', () => chat(request)) };
  const system = instructions(agent, nowMs, timezone, language);
  let result: ToolLoopResult | null = null;
  let blocked: { readonly actionId: string; readonly note: string } | null = null;
  let exhausted: ToolLoopExhausted | null = null;
  try {
    result = await runToolLoop(ctx, {
      model: caller,
      system: context === null || context.system === '' ? system : `${context.system}\n\n${system}`,
      // Chat Completions messages, as the context builder makes them (withConversation sends them alike).
      history: (context?.messages ?? []).map((message) => ({ ...message }) as unknown as JsonObject),
      input,
      tools: registryAgentTools(env.tools, agent.tools ?? []),
      maxSteps: TOOL_LOOP_MAX_STEPS,
      ...(rt.events === null ? {} : { onDelta: (text: string) => rt.events?.delta(text) }),
    });
  } catch (error) {
    const pause = ctx.pause ?? (error instanceof RunPaused ? error.pause : null);
    if (error instanceof ToolLoopExhausted) exhausted = error;
    else if (pause?.kind === 'blocked') blocked = { actionId: pause.actionId, note: pause.note };
    else throw error;
  } finally {
    ctx.close();
  }

  // Read after the run's last commit but the final one: nothing here is replayed.
  const written = ctx.taskWritten;
  const actions = written
    ? (await rt.store.listActions(rt.scope, { task_id: taskId, limit: 100 })).items
    : [];
  const end: LoopEnd =
    blocked !== null
      ? { kind: 'blocked', ...blocked }
      : exhausted !== null
        ? { kind: 'exhausted', maxSteps: exhausted.maxSteps, calls: exhausted.toolCalls }
        : { kind: 'answered', reply: result?.reply ?? '', calls: result?.tool_calls ?? [] };
  const reply = replyOf(end, language);
  const taskIds = written ? [taskId] : [];
  const output = {
    reply,
    language,
    task_ids: taskIds,
    action_ids: [...actions].sort((a, b) => a.created_at.localeCompare(b.created_at)).map((a) => a.id),
  };
  const task = written ? (rt.written.tasks.get(taskId) ?? (await rt.store.getTask(rt.scope, taskId))) : null;
  const finalBatch = (current: Session): CommitBatch => ({
    ...sessionMove(current, 'active', agent.name),
    ...(task === null ? {} : { update_tasks: [taskEnd(task, end)] }),
    list_open_tasks: { session_id: sessionId, limit: ANSWER_OPEN_TASKS },
    messages: turnMessages(rt, reply, taskIds),
  });
  const committed = await commitFinal(rt, session, written ? taskId : null, { output }, finalBatch);
  return { ...output, checkpoint_id: committed.checkpoint_id, final: committed };
}

/** How the loop ended: the model answered, an action's outcome is unknown, or it never finished. */
type LoopEnd =
  | { readonly kind: 'answered'; readonly reply: string; readonly calls: readonly ToolCallRecord[] }
  | { readonly kind: 'blocked'; readonly actionId: string; readonly note: string }
  | { readonly kind: 'exhausted'; readonly maxSteps: number; readonly calls: readonly ToolCallRecord[] };

function replyOf(end: LoopEnd, language: Language): string {
  const zh = language === 'zh';
  if (end.kind === 'answered') return end.reply;
  if (end.kind === 'blocked') {
    return zh
      ? `操作 ${end.actionId} 的结果未知（${end.note}），需要人工确认后才能继续。`
      : `I could not confirm whether action ${end.actionId} took effect (${end.note}); a person must resolve it before I go on.`;
  }
  return zh
    ? `我在 ${end.maxSteps} 步之内没有完成这个请求，已经停止。`
    : `I could not finish this request within ${end.maxSteps} steps, and stopped.`;
}

/** DONE with what the loop did, FAILED when it never finished, EXECUTING while an outcome is unknown. */
function taskEnd(task: Task, end: LoopEnd): NonNullable<CommitBatch['update_tasks']>[number] {
  const base = { id: task.id, expected_version: task.version };
  if (end.kind === 'blocked') {
    const line = `blocked: action ${end.actionId} needs a person (${end.note})`;
    return { ...base, patch: { status_line: line.slice(0, 500) } };
  }
  const calls = end.calls.map((call) => ({ name: call.name, result: call.result }));
  const names = [...new Set(calls.map((call) => call.name))].join(', ');
  if (end.kind === 'exhausted') {
    return {
      ...base,
      patch: {
        state: 'FAILED',
        status_line: `failed: no answer within ${end.maxSteps} model steps (${names})`.slice(0, 500),
        data: { ...task.data, result: { tool_calls: calls } },
        cause: `the model did not finish within ${end.maxSteps} answers`,
      },
    };
  }
  return {
    ...base,
    patch: {
      state: 'DONE',
      status_line: `done: ${names}`.slice(0, 500),
      data: { ...task.data, result: { reply: end.reply, tool_calls: calls } },
      cause: 'the model answered',
    },
  };
}
