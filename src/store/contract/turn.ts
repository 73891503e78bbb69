/** One turn, atomically: the writes of a turn in one batch, and what the batch wrote. */
import type { Action, Checkpoint, MemoryItem, Message, Session, Task } from '../../core/model.js';
import type { ActionCompletion, NewAction } from './actions.js';
import type { NewCheckpoint } from './checkpoints.js';
import type { Scope } from './common.js';
import type { NewRunEvent } from './events.js';
import type { MemoryKey, NewMemory } from './memory.js';
import type { NewMessage } from './messages.js';
import type { SessionPatch } from './sessions.js';
import type { NewTask, TaskPatch } from './tasks.js';

/** One atomic batch: every part becomes visible together, or none does. */
export interface TurnBatch {
  readonly session?: { readonly id: string; readonly expected_version: number; readonly patch: SessionPatch };
  readonly create_tasks?: readonly NewTask[];
  readonly update_tasks?: readonly {
    readonly id: string;
    readonly expected_version: number;
    readonly patch: TaskPatch;
  }[];
  /** Begun with the same idempotency rule as beginAction. */
  readonly begin_actions?: readonly NewAction[];
  readonly complete_actions?: readonly ({ readonly id: string } & ActionCompletion)[];
  readonly messages?: { readonly session_id: string; readonly items: readonly NewMessage[] };
  readonly checkpoint?: NewCheckpoint;
  /**
   * A lease of the scope's user to free once the rest of the batch is written: where the store can, in the
   * same commit (a run's final commit ends its lease with it, a round trip fewer). Freed only when `owner`
   * holds it, as `releaseLease` does; a batch that fails frees nothing. `expires_at`, when given, is the
   * expiry the owner was last granted (by `acquireLease`): the store then frees the lease if it still holds
   * that expiry without reading it first, and reads it as without the field when it does not.
   */
  readonly release_lease?: { readonly name: string; readonly owner: string; readonly expires_at?: string };
  /**
   * Items of the scope's user's long-term memory, each written as `putMemory` writes it (a live item keeps
   * its `created_at`), in the same commit as the rest: a run writes what a task's user chose with the
   * commit that marks the task DONE. At most one item per namespace and key.
   */
  readonly put_memory?: readonly NewMemory[];
  /**
   * Memory items of another scope of the same store, written after `put_memory` in the same commit: `put`
   * as `putMemory` writes, then `delete` as `deleteMemory` removes (an item not there is no error). Where a
   * runtime keeps its own records of a tenant's run (agentstate's run marks, in a scope of its own) with
   * the commit that makes them true, instead of a write of their own. At most one entry per namespace
   * and key across `put` and `delete`; TurnResult tells nothing of them.
   */
  readonly other_memory?: OtherMemory;
  /**
   * The open tasks (OPEN_TASK_STATES) of a session of the scope's user as they are once the batch is
   * written, newest first, at most `limit` (1 to MAX_PAGE_LIMIT): what a run answers with, without a read
   * of its own after the commit.
   */
  readonly list_open_tasks?: { readonly session_id: string; readonly limit: number };
  /**
   * The run's events, written in the same commit: first `items` (what the run did before it, such as
   * `run.started`), then one event per record the batch writes, in the batch's order (`task.updated` for
   * each task created or updated, `action.updated` for each action begun or completed, `message.created`
   * for each message, `checkpoint.created`), then `final` when given, built from what the batch wrote
   * (a run's last commit ends its stream with it). `session_id` is a session of the scope's user.
   */
  readonly events?: TurnEvents;
}

export interface OtherMemory {
  readonly scope: Scope;
  readonly put?: readonly NewMemory[];
  readonly delete?: readonly MemoryKey[];
}

export interface TurnEvents {
  readonly session_id: string;
  readonly run_id: string;
  readonly items?: readonly NewRunEvent[];
  /** Called once, inside the commit, with what the batch wrote (without `open_tasks` on some stores). */
  readonly final?: (written: TurnResult) => NewRunEvent;
}

export interface TurnResult {
  readonly session: Session | null;
  readonly tasks: Task[];
  readonly actions: Action[];
  readonly messages: Message[];
  readonly checkpoint: Checkpoint | null;
  /** With `release_lease`: true when the lease was held by its owner and is now free. */
  readonly lease_released?: boolean;
  /** With `put_memory`: the items as written, in the batch's order. */
  readonly memory?: MemoryItem[];
  /** With `list_open_tasks`: that session's open tasks after the batch, newest first. */
  readonly open_tasks?: Task[];
}

/** One turn, atomically. */
export interface TurnCalls {
  commitTurn(scope: Scope, batch: TurnBatch): Promise<TurnResult>;
}
