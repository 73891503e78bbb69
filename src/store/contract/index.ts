/**
 * The store contract: what every store does, one file per domain beside this one, naming no driver's types.
 * The store core (src/store/core, `createStateStore`) implements it once over a driver (core/driver.ts).
 *
 * Rules every adapter follows (the conformance suite in src/testing, `agentstate/testing`, proves them):
 * - Every call carries a scope. A record outside the scope is `null` / absent from lists, exactly as if it
 *   did not exist. Filtering happens inside the adapter (in the query or the key), never after.
 * - A missing record is `null`, not an error. Errors are `AgentStateError` with a string `code`.
 * - Every value written passes the plain-JSON guard; nothing is coerced or dropped.
 * - Values returned are the caller's own: mutating them never changes what is stored.
 * - Updates of sessions and tasks name the version they read; a stale one fails with `version_conflict`
 *   and changes nothing.
 * - An expired session (expires_at <= clock.now()) and its messages are invisible to every read at once.
 * - A record's id is unique within its tenant: creating one with an id another user of the tenant holds
 *   fails with `conflict`, as for one's own.
 * - A `session_id` that a task, an action or a checkpoint is given (on create, on a task update that moves
 *   it, in a turn) must name a session its owner can read: one of the same tenant and user, not expired
 *   (ended is fine). Otherwise the write fails with `not_found` naming the session and nothing is stored.
 *   null stays allowed, and a task keeps naming its session after that expires (tasks outlive sessions).
 * - After `close()`, every call fails with code `closed`; `close()` itself is safe to call twice.
 * - Input bounds are the same in every adapter (src/store/limits.ts): TTLs in seconds 1..315 360 000
 *   (10 years), lease TTLs 1..86 400 000 ms (24 hours), versions, seq, steps and counts at most
 *   2 147 483 647; names and scope ids 256 characters, idempotency and request keys 512, memory keys 1024,
 *   status lines 2000, message content and notes 1 000 000; 1000 messages per append. Out of bounds is
 *   `invalid_request` naming the field, and changes nothing.
 */
import type { ActionCalls } from './actions.js';
import type { BranchCalls } from './branches.js';
import type { CheckpointCalls } from './checkpoints.js';
import type { StoreCapabilities } from './common.js';
import type { CoordinationCalls } from './coordination.js';
import type { RunEventCalls } from './events.js';
import type { MaintenanceCalls } from './maintenance.js';
import type { MemoryCalls } from './memory.js';
import type { MessageCalls } from './messages.js';
import type { SessionCalls } from './sessions.js';
import type { TaskCalls } from './tasks.js';
import type { TurnCalls } from './turn.js';

export type {
  ActionCompletion,
  ActionQuery,
  ActionResolution,
  NewAction,
} from './actions.js';
export type { BranchCalls, ForkPoint, NewFork, Rewind, RewindResult } from './branches.js';
export type { CheckpointQuery, NewCheckpoint } from './checkpoints.js';
export {
  DEFAULT_PAGE_LIMIT,
  DEFAULT_SESSION_TTL_SECONDS,
  MAX_PAGE_LIMIT,
  type Page,
  type PageQuery,
  type ReadScope,
  type Scope,
  type StoreCapabilities,
  type StoreOptions,
} from './common.js';
export type { Lease, RequestKeyClaim, StoredResponse } from './coordination.js';
export {
  DEFAULT_RUN_EVENT_TTL_SECONDS,
  type NewRunEvent,
  type RunEventAppend,
  type RunEventQuery,
} from './events.js';
export type { ActionStats, RetentionCutoffs, RetentionSweep } from './maintenance.js';
export type { MemoryKey, MemoryQuery, NewMemory } from './memory.js';
export type { MessageQuery, NewMessage } from './messages.js';
export type {
  HeadLease,
  NewSession,
  NextRun,
  SessionHead,
  SessionHeadOptions,
  SessionPatch,
  SessionQuery,
} from './sessions.js';
export type { NewTask, TaskPatch, TaskQuery } from './tasks.js';
export type { OtherMemory, TurnBatch, TurnEvents, TurnResult } from './turn.js';

/** A store: the calls of every domain, one file each beside this one. */
export interface StateStore
  extends SessionCalls,
    BranchCalls,
    MessageCalls,
    TaskCalls,
    ActionCalls,
    CheckpointCalls,
    MemoryCalls,
    TurnCalls,
    RunEventCalls,
    CoordinationCalls,
    MaintenanceCalls {
  /** The adapter's name: 'memory', 'sqlite', 'postgres', 'redis', 'tiered'. */
  readonly adapter: string;
  readonly capabilities: StoreCapabilities;

  /** True when the backing service answers. */
  ping(): Promise<boolean>;
  close(): Promise<void>;
}
