/**
 * The task half of a fork or a rewind: the session's tasks as they stood at the point (each version is
 * stored with its snapshot), copied into the branch; a point with an effect in flight is refused.
 */
import { isoAt } from '../../core/clock.js';
import { versionConflict } from '../../core/errors.js';
import { newId } from '../../core/ids.js';
import type { JsonObject } from '../../core/json.js';
import type { Action, Session, Task, TaskState } from '../../core/model.js';
import { FINAL_TASK_STATES } from '../../core/model.js';
import type { Scope } from '../types.js';
import { conflict, type Op, type WriteOp } from './context.js';
import { event } from './tasks.js';

/** Where a copied task names what it was copied from. */
export const FORK_DATA_KEY = 'agentstate.fork';
const PAGE = 500;

const ownerOf = (s: Session): Scope => ({ tenant_id: s.tenant_id, user_id: s.user_id });

export async function allPages<T>(
  read: (after: number | string | null) => Promise<{ rec: T; pos: number | string }[]>,
) {
  const out: T[] = [];
  let after: number | string | null = null;
  for (;;) {
    const page = await read(after);
    for (const row of page) out.push(row.rec);
    if (page.length < PAGE) return out;
    after = page[page.length - 1]?.pos ?? null;
  }
}

export interface TaskAtFork {
  readonly task: Task;
  readonly state: TaskState;
  readonly version: number;
  readonly done: string[];
  readonly after: string[];
}

/**
 * The session's tasks as they stood just before `cut` (ISO-8601; null: now), with the actions that had
 * succeeded by then and those begun after; refuses a point with an effect in flight.
 */
export async function tasksAt(
  op: Op,
  session: Session,
  cut: string | null,
  seq: number,
): Promise<TaskAtFork[]> {
  const scope = ownerOf(session);
  const before = (at: string) => cut === null || at < cut;
  const tasks = await allPages((after) =>
    op.tx.listTasks(scope, { session_id: session.id }, { after, limit: PAGE }),
  );
  const out: TaskAtFork[] = [];
  for (const task of tasks.reverse()) {
    if (!before(task.created_at)) continue;
    let stood: Task = task;
    if (!before(task.updated_at)) {
      // Changed since: the version current at the point, from its event (every version has one).
      const events = (await op.tx.listTaskEvents(task)).filter((e) => before(e.at));
      const last = events[events.length - 1];
      if (last !== undefined)
        stood = { ...task, state: last.to_state, version: last.task_version, ...(last.snapshot ?? {}) };
    }
    const { state, version } = stood;
    const actions: Action[] = await allPages((after) =>
      op.tx.listActions(scope, { task_id: task.id }, { after, limit: PAGE }),
    );
    const done: string[] = [];
    const later: string[] = [];
    for (const action of actions.reverse()) {
      if (!before(action.created_at)) {
        later.push(action.id);
        continue;
      }
      const finished = action.status === 'SUCCESS' || action.status === 'FAILED';
      const settled =
        finished && action.completed_at !== null && before(action.completed_at)
          ? action.status
          : action.status === 'UNKNOWN'
            ? 'UNKNOWN'
            : 'PENDING';
      if (settled === 'PENDING' || settled === 'UNKNOWN')
        op.env.v.fail(
          `cannot branch session ${session.id} at seq ${seq}: action ${action.id} (${action.type}) was ${settled} there; resolve it or pick another point`,
          { action_id: action.id, status: settled },
        );
      if (settled === 'SUCCESS') done.push(action.id);
    }
    if (state === 'EXECUTING')
      op.env.v.fail(
        `cannot branch session ${session.id} at seq ${seq}: task ${task.id} was EXECUTING there; pick another point`,
        { task_id: task.id },
      );
    out.push({ task: stood, state, version, done, after: later });
  }
  return out;
}

/** Copies the tasks into the session `to` (new ids, version 1), each naming what it was copied from. */
export async function copyTasks(op: WriteOp, to: Session, tasks: readonly TaskAtFork[]): Promise<void> {
  const at = isoAt(op.now);
  for (const { task, state, version, done, after } of tasks) {
    const origin: JsonObject = { task_id: task.id, version, actions_done: done, actions_after: after };
    const copy: Task = {
      ...task,
      id: newId('task', op.env.random),
      session_id: to.id,
      state,
      data: { ...task.data, [FORK_DATA_KEY]: origin },
      version: 1,
      created_at: at,
      updated_at: at,
      closed_at: FINAL_TASK_STATES.includes(state) ? at : null,
    };
    if (!(await op.tx.insertTask(copy))) throw conflict(op.env, 'task', copy.id);
    await op.tx.addTaskEvent(event(op, copy, null, `copied from task ${task.id} (fork)`));
  }
}

/** Where tasks live in another store than sessions (tiered): the task half of a fork or a rewind. */
export interface TaskBranching {
  readonly from: Session;
  readonly seq: number;
  /** When the message after the point was written (null: none). */
  readonly cut: string | null;
  /** Copies the tasks as they stood into this session (null: only check the point). */
  readonly copyTo: Session | null;
  /** Moves the tasks of `from` to this session first (a rewind's branch). */
  readonly moveTo: Session | null;
}

export async function branchTasks(op: WriteOp, input: TaskBranching): Promise<void> {
  const tasks = await tasksAt(op, input.from, input.cut, input.seq);
  if (input.moveTo !== null) await moveTasks(op, input.from, input.moveTo);
  if (input.copyTo !== null) await copyTasks(op, input.copyTo, tasks);
}

export async function moveTasks(op: WriteOp, from: Session, to: Session): Promise<void> {
  const all = await allPages((after) =>
    op.tx.listTasks(ownerOf(from), { session_id: from.id }, { after, limit: PAGE }),
  );
  for (const task of all) {
    const moved: Task = { ...task, session_id: to.id, version: task.version + 1, updated_at: isoAt(op.now) };
    if (!(await op.tx.replaceTask(moved, task)))
      throw versionConflict(op.env.adapter, 'task', task.id, task.version, null);
  }
}
