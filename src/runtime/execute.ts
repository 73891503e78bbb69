/**
 * EXECUTING: the task's tool calls, one after the other, each an action of the durable kernel
 * (`performAction`, src/durable/action.ts: the same path as a durable run's `ctx.action`), with a checkpoint
 * before (the PENDING action, this step's status line and the checkpoint in one commit) and after (the
 * result and the checkpoint in one commit, made here; for the task's last call, that commit is the turn's
 * final one, which writes the result with the task's move to DONE and the turn's messages: a crash before
 * it leaves the action PENDING, as a crash before any "after" does, and the resumed run recovers it through
 * lookup). A step's key is looked up first (recorded): an action an earlier turn left is not begun again:
 * SUCCESS gives its result, FAILED fails the task, UNKNOWN blocks it, PENDING (a crash during the call) goes
 * through recovery. A task that moves to EXECUTING in this turn gets that move written with its first
 * call's begin (one commit), or on its own first when the first step begins nothing (no call, or its action
 * exists already).
 */
import { invalidRequest } from '../core/errors.js';
import type { JsonValue } from '../core/json.js';
import type { Action, Task } from '../core/model.js';
import { performAction } from '../durable/action.js';
import type { Language } from '../models/types.js';
import type { ActionCompletion } from '../store/types.js';
import { actionKey, type RetryPolicy } from './actions.js';
import { blockedText, failedText } from './replies.js';
import type { RunContext } from './run-context.js';
import { statusLine } from './status.js';
import type { PendingTransition } from './target.js';
import type { TaskType } from './task-type.js';
import type { ToolRegistry } from './tool.js';

/** The task's last write of the turn, made with the turn's messages. */
export interface FinalWrite {
  readonly state: 'DONE' | 'FAILED' | null;
  readonly status_line: string;
  readonly cause: string;
  /** An action the final commit completes: the last call's result, or the call that failed the task. */
  readonly complete_action: ({ readonly id: string } & ActionCompletion) | null;
}

export interface ExecutionReport {
  readonly task: Task;
  readonly write: FinalWrite;
  readonly text: string;
  readonly actions: Action[];
}

export interface ExecuteEnv {
  readonly tools: ToolRegistry;
  readonly policy: RetryPolicy;
  readonly language: Language;
  readonly sessionId: string;
}

function pick(tasks: readonly Task[], id: string, fallback: Task): Task {
  return tasks.find((task) => task.id === id) ?? fallback;
}

export async function executeTask(
  rt: RunContext,
  env: ExecuteEnv,
  start: Task,
  type: TaskType,
  /** The task's move to EXECUTING when it is still to be written (`start` shows it done). */
  transition: PendingTransition | null = null,
): Promise<ExecutionReport> {
  // When the task was EXECUTING before this run, calls and writes below may come before the run's next
  // commit (an action an earlier run left PENDING is looked up, retried or marked UNKNOWN at once): the
  // run's first checkpoint is stored before any of them. A task that moves to EXECUTING in this run has no
  // action yet: its first begin commit is the run's next write, and takes that checkpoint in (`commitLater`).
  if (transition === null) await rt.settle();
  const { store, scope } = rt;
  const results: JsonValue[] = [];
  const actions: Action[] = [];
  let task = start;
  let unwritten = transition;
  /** Writes the pending move to EXECUTING in a commit of its own. */
  const writeTransition = async () => {
    if (unwritten === null) return;
    const { result } = await rt.commit('executing', { update_tasks: [unwritten] }, task.id);
    unwritten = null;
    task = pick(result.tasks, task.id, task);
  };
  const done = (completion: FinalWrite['complete_action']): ExecutionReport => ({
    task,
    actions,
    text: type.doneText(task.slots, results, env.language),
    write: {
      state: 'DONE',
      status_line: statusLine(type, 'DONE', task.slots, { kind: 'done', outcome: summarize(results) }),
      cause: `all ${results.length} steps succeeded`,
      complete_action: completion,
    },
  });
  for (let index = 0; ; index++) {
    const call = type.nextCall(task.slots, results);
    if (call === null) {
      await writeTransition();
      return done(null);
    }
    const tool = env.tools.get(call.tool);
    if (tool === undefined) {
      await writeTransition();
      throw invalidRequest(
        `task ${task.id} needs the tool ${call.tool}, which is not in this run's tool registry`,
      );
    }
    const step = index + 1;
    const key = actionKey(task.id, index, call.params, executionRound(task));
    // While the move to EXECUTING is still unwritten, no action of this round can exist: its first begin
    // writes that move, and a round that went on to FAILED comes back through COLLECTING as a new round
    // (new keys). The step is recorded all the same (the journal keeps its shape), without the read.
    const mayExist = unwritten === null;
    const existing = (await rt.read('action', async () =>
      mayExist ? ((await store.getActionByKey(scope, key)) as unknown as JsonValue) : null,
    )) as unknown as Action | null;
    if (existing !== null) await writeTransition();
    const running = { kind: 'running', step, tool: call.tool } as const;
    const begin = {
      update_tasks: [
        {
          id: task.id,
          expected_version: unwritten?.expected_version ?? task.version,
          patch: { ...unwritten?.patch, status_line: statusLine(type, 'EXECUTING', task.slots, running) },
        },
      ],
    };
    const end = await performAction({
      rt,
      policy: env.policy,
      taskId: task.id,
      ordinal: index,
      tool,
      params: call.params,
      key,
      type: 'tool_call',
      label: `${call.tool} (step ${step})`,
      kind: 'tool',
      withBegin: begin,
      existing,
      complete: 'caller',
    });
    if (existing === null) {
      // Its begin commit wrote the task (and the move to EXECUTING, if it was still to be written).
      unwritten = null;
      task = rt.written.tasks.get(task.id) ?? task;
    }
    if (end.status === 'UNKNOWN') {
      return blocked(type, task, [...actions, end.action], end.action, call.tool, env.language);
    }
    if (end.status === 'FAILED') {
      return failed(type, task, [...actions, end.action], end.message, env.language, end.completion);
    }
    const last = type.nextCall(task.slots, [...results, end.result]) === null;
    if (last || end.completion === null) {
      // The last call: the turn's final commit writes its result (see the top of this file); an action
      // found done needs no write.
      actions.push(end.action);
      results.push(end.result);
      if (last) return done(end.completion);
      continue;
    }
    const { result } = await rt.commit(
      `after ${call.tool} (step ${step})`,
      {
        complete_actions: [end.completion],
        update_tasks: [
          {
            id: task.id,
            expected_version: task.version,
            patch: {
              status_line: statusLine(type, 'EXECUTING', task.slots, {
                kind: 'completed',
                step,
                tool: call.tool,
              }),
            },
          },
        ],
      },
      task.id,
    );
    task = pick(result.tasks, task.id, task);
    actions.push(result.actions.find((a) => a.id === end.action.id) ?? end.action);
    results.push(end.result);
  }
}

/** How many times the task went back from FAILED to try again (kept in `data.round`). */
export function executionRound(task: Task): number {
  const round = task.data.round;
  return typeof round === 'number' && Number.isInteger(round) && round > 0 ? round : 0;
}

function summarize(results: readonly JsonValue[]): string {
  const last = results[results.length - 1];
  if (last !== null && typeof last === 'object' && !Array.isArray(last)) {
    for (const key of ['booking_id', 'url', 'id']) {
      const value = last[key];
      if (typeof value === 'string' || typeof value === 'number') return `${key} ${value}`;
    }
  }
  return `${results.length} steps`;
}

function failed(
  type: TaskType,
  task: Task,
  actions: Action[],
  reason: string,
  language: Language,
  failAction: FinalWrite['complete_action'],
): ExecutionReport {
  return {
    task,
    actions,
    text: failedText(type, task.slots, reason, language),
    write: {
      state: 'FAILED',
      status_line: statusLine(type, 'FAILED', task.slots, { kind: 'failed', reason }),
      cause: `a step failed: ${reason}`,
      complete_action: failAction,
    },
  };
}

function blocked(
  type: TaskType,
  task: Task,
  actions: Action[],
  action: Action,
  tool: string,
  language: Language,
): ExecutionReport {
  const reason = `${tool} (${action.id}) may or may not have happened: ${action.note ?? 'outcome unknown'}; resolve the action to continue`;
  return {
    task,
    actions,
    text: blockedText(type, task.slots, tool, action.id, language),
    write: {
      state: null,
      status_line: statusLine(type, 'EXECUTING', task.slots, { kind: 'blocked', reason }),
      cause: 'blocked',
      complete_action: null,
    },
  };
}
