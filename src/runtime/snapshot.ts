/**
 * What a turn starts from: the session and the open tasks it may touch. Tasks of this session, and open
 * tasks of the same user whose session has expired or ended (tasks outlive sessions): a new session of the
 * user finds them and can continue them.
 */

import { sessionNotFound } from '../core/errors.js';
import type { Session, Task } from '../core/model.js';
import { OPEN_TASK_STATES } from '../core/model.js';
import type { OpenTaskInfo } from '../models/types.js';
import type { Scope, StateStore } from '../store/types.js';
import type { Agent } from './agent.js';
import { taskTypeOf } from './agent.js';
import { missingSlots } from './task-type.js';

export interface Snapshot {
  readonly session: Session;
  readonly tasks: Task[];
}

/** Open tasks of the user a turn starts from, at most (the newest). */
export const MAX_OPEN_TASKS = 200;

export async function loadSnapshot(
  store: StateStore,
  scope: Scope,
  sessionId: string,
  agent: Agent,
  /** The session when the caller has just read it (under the run's lease): saves reading it again. */
  known: Session | null = null,
  /** The user's open tasks (at most MAX_OPEN_TASKS, newest first) read with `known`: saves that read too. */
  knownOpen: readonly Task[] | null = null,
): Promise<Snapshot> {
  const session = known?.id === sessionId ? known : await store.getSession(scope, sessionId);
  if (session === null) throw sessionNotFound(sessionId);
  const types = new Set(agent.taskTypes.map((type) => type.name));
  const open =
    known?.id === sessionId && knownOpen !== null
      ? knownOpen
      : (await store.listTasks(scope, { state: OPEN_TASK_STATES, limit: MAX_OPEN_TASKS })).items;
  const liveSessions = new Map<string, boolean>([[session.id, true]]);
  const tasks: Task[] = [];
  for (const task of open) {
    if (!types.has(task.type)) continue;
    const owner = task.session_id;
    if (owner !== null && !liveSessions.has(owner)) {
      const other = await store.getSession(scope, owner);
      liveSessions.set(owner, other !== null && other.status !== 'ended' && other.status !== 'expired');
    }
    // A task of another live session belongs to that session; an orphan is this session's to continue.
    if (owner !== null && owner !== session.id && liveSessions.get(owner) === true) continue;
    tasks.push(task);
  }
  tasks.sort((a, b) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id));
  return { session, tasks };
}

export function openTaskInfo(agent: Agent, task: Task): OpenTaskInfo {
  const type = taskTypeOf(agent, task.type);
  return {
    id: task.id,
    type: task.type,
    state: task.state,
    slots: task.slots,
    missing: type === undefined ? [] : missingSlots(type, task.slots),
    status_line: task.status_line,
    updated_at: task.updated_at,
  };
}
