/** Tasks: state machines that outlive their session, updated by version. */
import type { JsonObject } from '../../core/json.js';
import type { Task, TaskEvent, TaskState } from '../../core/model.js';
import type { Page, PageQuery, ReadScope, Scope } from './common.js';

export interface NewTask {
  readonly id?: string;
  readonly session_id?: string | null;
  readonly type: string;
  /** Default INIT. */
  readonly state?: TaskState;
  readonly slots?: JsonObject;
  readonly status_line?: string;
  readonly data?: JsonObject;
}

export interface TaskPatch {
  /** A change of state must be allowed by TASK_TRANSITIONS; it writes a TaskEvent. */
  readonly state?: TaskState;
  /** Replaces the slots as a whole. */
  readonly slots?: JsonObject;
  readonly status_line?: string;
  readonly data?: JsonObject;
  readonly session_id?: string | null;
  /** Why the state changed: kept on the TaskEvent. Default 'update'. */
  readonly cause?: string;
}

export interface TaskQuery extends PageQuery {
  readonly session_id?: string;
  readonly state?: TaskState | readonly TaskState[];
  readonly type?: string;
}

export interface TaskCalls {
  createTask(scope: Scope, input: NewTask): Promise<Task>;
  getTask(scope: ReadScope, id: string): Promise<Task | null>;
  listTasks(scope: ReadScope, query?: TaskQuery): Promise<Page<Task>>;
  /** As updateSession: `expected_version` is 1..2 147 483 647. */
  updateTask(scope: ReadScope, id: string, expected_version: number, patch: TaskPatch): Promise<Task>;
  /** A task's transitions, oldest first. */
  listTaskEvents(scope: ReadScope, task_id: string): Promise<TaskEvent[]>;
}
