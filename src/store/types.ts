/**
 * The store contract: the whole of what an adapter must do, in one file, naming no driver's types.
 *
 * Rules every adapter follows (the conformance suite in test/conformance proves them):
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
import type { Clock, RandomSource } from '../core/clock.js';
import type { JsonObject, JsonValue } from '../core/json.js';
import type { NextRun } from '../core/run-id.js';

export type { NextRun };

import type {
  Action,
  ActionError,
  ActionStatus,
  Checkpoint,
  MemoryItem,
  Message,
  MessageRole,
  Session,
  SessionStatus,
  Task,
  TaskEvent,
  TaskState,
  ToolCall,
} from '../core/model.js';

/** Who is asking: every record belongs to one tenant and one user. */
export interface Scope {
  readonly tenant_id: string;
  readonly user_id: string;
}

/**
 * A read scope: a user's records, or, with `user_id` absent, all of one tenant's records (a tenant key).
 * There is no read without a tenant.
 */
export interface ReadScope {
  readonly tenant_id: string;
  readonly user_id?: string;
}

export interface Page<T> {
  readonly items: T[];
  /** Pass back as `cursor` for the next page; null when there is none. */
  readonly next_cursor: string | null;
}

export interface PageQuery {
  /** 1..500; default 50 when absent (null is refused, like any other non-number). */
  readonly limit?: number;
  readonly cursor?: string | null;
}

// ---- inputs -------------------------------------------------------------------------------------------

export interface NewSession {
  /** Optional caller-chosen id (`sess_` + 128 bits); generated when absent. */
  readonly id?: string;
  readonly agent?: string | null;
  readonly context?: JsonObject;
  /** Sliding time to live in seconds, 1..315 360 000 (10 years); the store's default when absent. */
  readonly ttl_seconds?: number;
  readonly status?: SessionStatus;
}

export interface SessionPatch {
  readonly status?: SessionStatus;
  readonly context?: JsonObject;
  readonly agent?: string | null;
  /** 1..315 360 000 (10 years). */
  readonly ttl_seconds?: number;
}

export interface SessionQuery extends PageQuery {
  readonly status?: SessionStatus;
}

export interface NewMessage {
  readonly role: MessageRole;
  readonly content: string;
  readonly name?: string | null;
  readonly tool_calls?: ToolCall[] | null;
  readonly tool_call_id?: string | null;
  readonly metadata?: JsonObject;
}

export interface MessageQuery {
  /** Messages with seq > after_seq; default 0 (from the first); at most 2 147 483 647. */
  readonly after_seq?: number;
  /** 1..1000; default 100. */
  readonly limit?: number;
}

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

export interface NewAction {
  readonly id?: string;
  readonly task_id: string;
  readonly session_id?: string | null;
  readonly type: string;
  readonly tool?: string | null;
  readonly params: JsonValue;
  /** Unique per tenant and user: beginning an action with a key that exists returns the existing action. */
  readonly idempotency_key: string;
}

export interface ActionCompletion {
  readonly status: 'SUCCESS' | 'FAILED';
  readonly result?: JsonValue;
  readonly error?: ActionError;
}

export interface ActionResolution extends ActionCompletion {
  /** Who resolved it and why, kept in `note`. */
  readonly note: string;
}

export interface ActionQuery extends PageQuery {
  readonly task_id?: string;
  readonly status?: ActionStatus;
}

export interface NewCheckpoint {
  readonly id?: string;
  readonly run_id: string;
  readonly session_id?: string | null;
  readonly task_id?: string | null;
  /** 0..2 147 483 647. */
  readonly step: number;
  readonly parent_id?: string | null;
  readonly label?: string;
  /** Named parts of the state. Stored so that storage grows with what changed since the previous checkpoint. */
  readonly channels: JsonObject;
  readonly metadata?: JsonObject;
}

export interface CheckpointQuery {
  /** 1..500; default 20. */
  readonly limit?: number;
  /** Only checkpoints older than this one (by id), for paging back through history. */
  readonly before?: string | null;
  /** The previous page's `next_cursor`: the same as `before` (give one of them). */
  readonly cursor?: string | null;
}

export interface NewMemory {
  readonly namespace: string;
  readonly key: string;
  readonly value: JsonValue;
  /** Optional time to live in seconds, 1..315 360 000 (10 years); none by default. */
  readonly ttl_seconds?: number | null;
}

export interface MemoryQuery extends PageQuery {
  readonly prefix?: string;
}

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
   * holds it, as `releaseLease` does; a batch that fails frees nothing.
   */
  readonly release_lease?: { readonly name: string; readonly owner: string };
  /**
   * Items of the scope's user's long-term memory, each written as `putMemory` writes it (a live item keeps
   * its `created_at`), in the same commit as the rest: a run writes what a task's user chose with the
   * commit that marks the task DONE. At most one item per namespace and key.
   */
  readonly put_memory?: readonly NewMemory[];
  /**
   * The open tasks (OPEN_TASK_STATES) of a session of the scope's user as they are once the batch is
   * written, newest first, at most `limit` (1 to MAX_PAGE_LIMIT): what a run answers with, without a read
   * of its own after the commit.
   */
  readonly list_open_tasks?: { readonly session_id: string; readonly limit: number };
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

/** A session with its newest message (null when it has none): what a run of the session starts from. */
export interface SessionHead {
  readonly session: Session;
  readonly last_message: Message | null;
  /**
   * With `open_tasks` asked (SessionHeadOptions): the scope's open tasks (OPEN_TASK_STATES, of every session),
   * newest first, at most that many, as `listTasks` gives them.
   */
  readonly open_tasks?: Task[];
  /** With `next_run` asked: the session's next run (runIdFor its newest message) and its newest checkpoint's label. */
  readonly next_run?: NextRun;
}

/** What `getSessionHead` reads besides the session and its newest message. */
export interface SessionHeadOptions {
  /** The scope's open tasks, at most this many (1 to MAX_PAGE_LIMIT): what a run starts from. */
  readonly open_tasks?: number;
  /**
   * True: the run the session's next turn is (`runIdFor(session id, seq of its newest message)`) and the
   * label of that run's newest checkpoint, as latestCheckpoint gives it; on PostgreSQL in the same statement.
   */
  readonly next_run?: boolean;
}

/** A time-limited claim of a named resource (for example: the right to run a session). */
export interface Lease {
  readonly name: string;
  readonly owner: string;
  readonly expires_at: string;
}

/** The answer kept for a request sent with an Idempotency-Key. */
export interface StoredResponse {
  readonly status: number;
  readonly body: JsonValue;
}

export type RequestKeyClaim =
  | { readonly state: 'new' }
  | { readonly state: 'in_progress' }
  | { readonly state: 'done'; readonly response: StoredResponse }
  | { readonly state: 'mismatch' };

export interface StoreCapabilities {
  /** Several OS processes may share the store (false for memory:). */
  readonly multiProcess: boolean;
  /** Data survives the process (false for memory:). */
  readonly durable: boolean;
}

export interface StateStore {
  /** The adapter's name: 'memory', 'sqlite', 'postgres', 'redis', 'tiered'. */
  readonly adapter: string;
  readonly capabilities: StoreCapabilities;

  // sessions
  createSession(scope: Scope, input: NewSession): Promise<Session>;
  getSession(scope: ReadScope, id: string): Promise<Session | null>;
  /**
   * The session and its newest message, and the scope's open tasks when asked, in one read where the store
   * can (PostgreSQL: one statement); null when getSession gives null.
   */
  getSessionHead(scope: ReadScope, id: string, options?: SessionHeadOptions): Promise<SessionHead | null>;
  listSessions(scope: ReadScope, query?: SessionQuery): Promise<Page<Session>>;
  /**
   * Applies the patch when `expected_version` is current; bumps the version and renews the TTL. A version
   * outside 1..2 147 483 647 is `invalid_request` (no version can be there), not a conflict.
   */
  updateSession(
    scope: ReadScope,
    id: string,
    expected_version: number,
    patch: SessionPatch,
  ): Promise<Session>;
  /** Renews the sliding TTL (no version change). Null when the session is missing or expired. */
  touchSession(scope: ReadScope, id: string): Promise<Session | null>;
  /** Sets status `ended` (its tasks stay). Null when missing. */
  endSession(scope: ReadScope, id: string): Promise<Session | null>;
  /** Removes the session and its messages now. */
  deleteSession(scope: ReadScope, id: string): Promise<boolean>;

  // messages (each session's seq starts at 1 and has no gaps); appending renews the session's TTL
  appendMessages(scope: ReadScope, session_id: string, messages: readonly NewMessage[]): Promise<Message[]>;
  listMessages(scope: ReadScope, session_id: string, query?: MessageQuery): Promise<Message[]>;
  /** The last `n` messages in ascending seq order. */
  lastMessages(scope: ReadScope, session_id: string, n: number): Promise<Message[]>;

  // tasks
  createTask(scope: Scope, input: NewTask): Promise<Task>;
  getTask(scope: ReadScope, id: string): Promise<Task | null>;
  listTasks(scope: ReadScope, query?: TaskQuery): Promise<Page<Task>>;
  /** As updateSession: `expected_version` is 1..2 147 483 647. */
  updateTask(scope: ReadScope, id: string, expected_version: number, patch: TaskPatch): Promise<Task>;
  /** A task's transitions, oldest first. */
  listTaskEvents(scope: ReadScope, task_id: string): Promise<TaskEvent[]>;

  // actions
  beginAction(scope: Scope, input: NewAction): Promise<{ action: Action; created: boolean }>;
  getAction(scope: ReadScope, id: string): Promise<Action | null>;
  getActionByKey(scope: Scope, idempotency_key: string): Promise<Action | null>;
  /** PENDING -> SUCCESS | FAILED. */
  completeAction(scope: ReadScope, id: string, completion: ActionCompletion): Promise<Action>;
  /** PENDING -> UNKNOWN with the reason in `note`. */
  markActionUnknown(scope: ReadScope, id: string, note: string): Promise<Action>;
  /** PENDING | UNKNOWN -> SUCCESS | FAILED, by a person or a later lookup. */
  resolveAction(scope: ReadScope, id: string, resolution: ActionResolution): Promise<Action>;
  /** Counts one more attempt of a PENDING action (a retry with the same key). */
  recordAttempt(scope: ReadScope, id: string): Promise<Action>;
  listActions(scope: ReadScope, query?: ActionQuery): Promise<Page<Action>>;

  // checkpoints
  putCheckpoint(scope: Scope, input: NewCheckpoint): Promise<Checkpoint>;
  getCheckpoint(scope: ReadScope, id: string): Promise<Checkpoint | null>;
  latestCheckpoint(scope: ReadScope, run_id: string): Promise<Checkpoint | null>;
  /** Newest first. */
  listCheckpoints(scope: ReadScope, run_id: string, query?: CheckpointQuery): Promise<Page<Checkpoint>>;
  /** Keeps the newest `keep` checkpoints of the run; returns how many were removed. */
  pruneCheckpoints(scope: ReadScope, run_id: string, keep: number): Promise<number>;

  // long-term memory
  putMemory(scope: Scope, input: NewMemory): Promise<MemoryItem>;
  getMemory(scope: Scope, namespace: string, key: string): Promise<MemoryItem | null>;
  deleteMemory(scope: Scope, namespace: string, key: string): Promise<boolean>;
  listMemory(scope: Scope, namespace: string, query?: MemoryQuery): Promise<Page<MemoryItem>>;

  // one turn, atomically
  commitTurn(scope: Scope, batch: TurnBatch): Promise<TurnResult>;

  // leases: a compare-and-swap claim with an expiry, so a dead owner never blocks forever
  /**
   * Takes the lease when it is free, expired or already ours; null when another owner holds it.
   * `ttl_ms` is 1..86 400 000 (24 hours).
   */
  acquireLease(scope: Scope, name: string, owner: string, ttl_ms: number): Promise<Lease | null>;
  /** Frees the lease if `owner` holds it. */
  releaseLease(scope: Scope, name: string, owner: string): Promise<boolean>;

  // request idempotency (HTTP Idempotency-Key)
  /**
   * Claims `key` for a request. It is kept `ttl_seconds` once completed; until then it expires after
   * `in_progress_ttl_seconds` (default: ttl_seconds), so a claim whose request died is not held for a day.
   * Both are 1..315 360 000 (10 years).
   */
  claimRequestKey(
    scope: Scope,
    key: string,
    request_hash: string,
    ttl_seconds: number,
    in_progress_ttl_seconds?: number,
  ): Promise<RequestKeyClaim>;
  completeRequestKey(scope: Scope, key: string, response: StoredResponse): Promise<void>;
  releaseRequestKey(scope: Scope, key: string): Promise<void>;

  // expiry
  /** Deletes up to `limit` expired sessions with their messages; returns the count. Tasks, actions, checkpoints stay. */
  sweepExpired(limit: number): Promise<number>;
  /**
   * Sessions not yet expired, by status (every status a key, 0 when none; `expired` is always 0), across
   * all tenants: for the active-sessions gauge. Cheap: an indexed count or maintained counters, never a
   * scan of every session.
   */
  sessionStats(): Promise<Record<SessionStatus, number>>;
  /**
   * Actions in status PENDING and UNKNOWN (waiting for a person to resolve them), across all tenants: for
   * the UNKNOWN-actions gauge. Cheap: an indexed count or maintained counters, never a scan of every action.
   */
  actionStats(): Promise<ActionStats>;
  /**
   * Retention, across all tenants, up to `limit` records of each kind per call: checkpoints created before
   * `checkpoints_before` (with the blobs no kept checkpoint needs), finished actions (SUCCESS / FAILED, never
   * PENDING / UNKNOWN) last changed before `actions_before`, and tasks last changed before `tasks_before`
   * with their events, actions and checkpoints. An absent cutoff deletes nothing of that kind. Returns
   * how many of each were deleted (a task's own actions and checkpoints count in `actions`/`checkpoints`).
   */
  sweepRetention(cutoffs: RetentionCutoffs, limit: number): Promise<RetentionSweep>;

  /** True when the backing service answers. */
  ping(): Promise<boolean>;
  close(): Promise<void>;
}

/** Actions not finished yet, across all tenants (see StateStore.actionStats). */
export interface ActionStats {
  readonly pending: number;
  readonly unknown: number;
}

/** ISO-8601 UTC instants: records older than these are removed by sweepRetention. */
export interface RetentionCutoffs {
  readonly tasks_before?: string;
  readonly actions_before?: string;
  readonly checkpoints_before?: string;
}

export interface RetentionSweep {
  readonly tasks: number;
  readonly actions: number;
  readonly checkpoints: number;
}

/** Options every adapter takes. One object, a documented default per field; never mutated. */
export interface StoreOptions {
  /** The source of time. Default: the system clock. */
  readonly clock?: Clock;
  /** The source of random bytes for ids. Default: node:crypto. */
  readonly random?: RandomSource;
  /** Session TTL when a session names none. Default 1800 (30 minutes). */
  readonly defaultSessionTtlSeconds?: number;
}

export const DEFAULT_SESSION_TTL_SECONDS = 1800;
export const DEFAULT_PAGE_LIMIT = 50;
export const MAX_PAGE_LIMIT = 500;
