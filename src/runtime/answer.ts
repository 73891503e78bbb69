/**
 * A turn's answer, built from what the run's commits wrote: the same JSON is the run's final event
 * (`run.completed`, written inside its final commit) and what `runTurn` returns, so a client that streams
 * a run and one that waits for it read the same thing.
 */
import { type Action, OPEN_TASK_STATES, type Session, type Task } from '../core/model.js';
import type { Language } from '../models/types.js';
import type { TurnResult } from '../store/types.js';
import { ANSWER_OPEN_TASKS } from './program.js';

export interface TurnOutput {
  readonly run_id: string;
  readonly reply: string;
  readonly language: Language;
  readonly session: Session;
  /** The tasks the turn touched, then the session's other open tasks. */
  readonly tasks: Task[];
  readonly actions: Action[];
  readonly checkpoint_id: string;
  /** True when an interrupted run was continued (part of it replayed from its journal). */
  readonly resumed: boolean;
  /** The model the run ran with. */
  readonly model?: string;
}

/** What the run knows besides its final commit: records its commits wrote, and records it read. */
export interface AnswerParts {
  readonly runId: string;
  readonly sessionId: string;
  readonly model: string;
  readonly resumed: boolean;
  readonly output: {
    readonly reply: string;
    readonly language: Language;
    readonly task_ids: readonly string[];
    readonly action_ids: readonly string[];
  };
  readonly checkpointId: string;
  /**
   * Tasks and actions written by the run's commits, then those read for the answer, by id (the tasks in
   * the order the run first wrote them).
   */
  readonly tasks: ReadonlyMap<string, Task>;
  readonly actions: ReadonlyMap<string, Action>;
  /**
   * Open tasks as they were before the final commit (any user's session; newest first), when the final
   * commit does not list them itself (`open_tasks`).
   */
  readonly openBefore: readonly Task[];
  /** The session as read before the final commit, for a final commit that does not write it. */
  readonly session: Session | null;
}

const isOpen = (task: Task) => (OPEN_TASK_STATES as readonly string[]).includes(task.state);

/**
 * The session's open tasks once the run's writes landed: as its final commit listed them, else the open
 * tasks read before the run (or before its final commit) with every task the run wrote in place.
 */
export function openAfter(
  sessionId: string,
  before: readonly Task[],
  changed: ReadonlyMap<string, Task>,
  listed: readonly Task[] | undefined,
): Task[] {
  if (listed !== undefined) return [...listed];
  const known = new Set(before.map((task) => task.id));
  const created = [...changed.values()].filter((task) => !known.has(task.id)).reverse();
  const open = [...created, ...before.map((task) => changed.get(task.id) ?? task)];
  return open.filter((task) => task.session_id === sessionId && isOpen(task)).slice(0, ANSWER_OPEN_TASKS);
}

export function answerOf(parts: AnswerParts, written: TurnResult): TurnOutput {
  const session = written.session?.id === parts.sessionId ? written.session : parts.session;
  if (session === null || session.id !== parts.sessionId)
    throw new Error(`the final commit of run ${parts.runId} wrote no session ${parts.sessionId}`);
  const known = new Map(parts.tasks);
  for (const task of written.tasks) known.set(task.id, task);
  const open = openAfter(parts.sessionId, parts.openBefore, known, written.open_tasks);
  for (const task of open) {
    const had = known.get(task.id);
    if (had === undefined || had.version < task.version) known.set(task.id, task);
  }
  const tasks: Task[] = [];
  for (const id of parts.output.task_ids) {
    const task = known.get(id);
    if (task !== undefined) tasks.push(task);
  }
  for (const task of open) if (!parts.output.task_ids.includes(task.id)) tasks.push(task);
  const actions = new Map(parts.actions);
  for (const action of written.actions) actions.set(action.id, action);
  return {
    run_id: parts.runId,
    reply: parts.output.reply,
    language: parts.output.language,
    session,
    tasks,
    actions: parts.output.action_ids.flatMap((id) => {
      const action = actions.get(id);
      return action === undefined ? [] : [action];
    }),
    checkpoint_id: parts.checkpointId,
    resumed: parts.resumed,
    model: parts.model,
  };
}
