/**
 * The driver contract: what a storage must do for the store core (`createStateStore`). A driver stores and
 * reads rows; it knows no rule of the StateStore contract. The core checks every input, applies every rule
 * (scope, expiry, versions, transitions, ownership, record building, error wording) and hands the driver
 * finished records.
 *
 * What a driver promises:
 * - `transaction` runs its work atomically: every write of it lands, or none does. A driver may run the
 *   work again (optimistic concurrency), so the work does nothing but call the transaction.
 * - Reads inside a transaction see the transaction's own writes (lists too, unless `listsAfterCommit`).
 * - `insert*` writes a new record and answers false, writing nothing, when its id is taken in its tenant.
 * - `replace*` writes a new version of a record only while the stored one is still `previous` (same
 *   version, status or expiry, as each method says), so a driver with weaker isolation stays correct;
 *   false when it is not.
 * - Every read is scoped: a record outside the scope is absent. Lists filter in the storage, never after.
 * - Records handed to the driver, and those it returns, are never shared with what it keeps.
 */

import type { JsonObject } from '../../core/json.js';
import type {
  Action,
  ActionStatus,
  Checkpoint,
  MemoryItem,
  Message,
  RunEventType,
  Session,
  SessionStatus,
  Task,
  TaskEvent,
  TaskState,
} from '../../core/model.js';
import type { CheckedRetention } from '../shared/retention.js';
import type {
  ActionStats,
  ReadScope,
  RetentionSweep,
  Scope,
  SessionHead,
  StoreCapabilities,
  StoredResponse,
} from '../types.js';

/** Where a record stands in its list (newest first; memory items by key): the core seals it in cursors. */
export type ListPosition = number | string;

/** A listed record with its position. */
export interface Listed<T> {
  readonly rec: T;
  readonly pos: ListPosition;
}

/** A page as the core asks for it: records after `after` (exclusive; null: from the start), at most `limit`. */
export interface PageRequest {
  readonly after: ListPosition | null;
  readonly limit: number;
}

export interface SessionFilter {
  readonly status?: SessionStatus;
  /** Only sessions that expire after this instant (ISO-8601). */
  readonly liveAt: string;
}

export interface TaskFilter {
  readonly session_id?: string;
  readonly states?: readonly TaskState[];
  readonly type?: string;
}

export interface ActionFilter {
  readonly task_id?: string;
  readonly status?: ActionStatus;
}

export interface MemoryFilter {
  readonly prefix: string;
  /** Only items with no expiry or one after this instant (ISO-8601). */
  readonly liveAt: string;
}

/** A run's event as stored: `seq` numbers it within its run, from 1 (the driver assigns it on append). */
/** Which run events a driver lists: one run of one session, seq > after_seq, at most `limit`. */
export interface RunEventQuery {
  session_id: string;
  run_id: string;
  after_seq: number;
  limit: number;
}

export interface RunEventRow {
  readonly tenant_id: string;
  readonly user_id: string;
  readonly session_id: string;
  readonly run_id: string;
  readonly seq: number;
  readonly type: RunEventType;
  readonly data: JsonObject;
  readonly created_at: string;
  /** When the row may be swept, once no newer row of its run is still kept (ISO-8601). */
  readonly expires_at: string;
}

/** A task's slots, data and status line at a version (what a fork copies as it stood at its point). */
export interface TaskSnapshot {
  readonly slots: Task['slots'];
  readonly data: Task['data'];
  readonly status_line: string;
}

/**
 * A task event as stored: each version of a task has one, its snapshot with it. Versions that changed no
 * state (from_state = to_state) are the store's own history; callers see only changes of state.
 */
export interface StoredTaskEvent extends TaskEvent {
  readonly snapshot?: TaskSnapshot;
}

/** A lease as stored. */
export interface LeaseRow {
  readonly owner: string;
  readonly expires_ms: number;
}

/** A request key as stored. */
export interface RequestKeyRow {
  readonly request_hash: string;
  readonly ttl_seconds: number;
  readonly expires_ms: number;
  readonly response: StoredResponse | null;
}

export interface DriverReads {
  /** The session in scope, expired or not. */
  getSession(scope: ReadScope, id: string): Promise<Session | null>;
  listSessions(scope: ReadScope, filter: SessionFilter, page: PageRequest): Promise<Listed<Session>[]>;
  /** How many messages the session has (its last seq). */
  messageCount(session: Session): Promise<number>;
  /** Messages with seq > after_seq, ascending, at most `limit`. */
  listMessages(session: Session, after_seq: number, limit: number): Promise<Message[]>;
  /** The last `n` messages, ascending. */
  lastMessages(session: Session, n: number): Promise<Message[]>;

  getTask(scope: ReadScope, id: string): Promise<Task | null>;
  listTasks(scope: ReadScope, filter: TaskFilter, page: PageRequest): Promise<Listed<Task>[]>;
  /** The task's events, oldest first. */
  listTaskEvents(task: Task): Promise<StoredTaskEvent[]>;

  getAction(scope: ReadScope, id: string): Promise<Action | null>;
  getActionByKey(scope: Scope, idempotency_key: string): Promise<Action | null>;
  listActions(scope: ReadScope, filter: ActionFilter, page: PageRequest): Promise<Listed<Action>[]>;

  getCheckpoint(scope: ReadScope, id: string): Promise<Checkpoint | null>;
  /** The run's most recently written checkpoint in scope. */
  latestCheckpoint(scope: ReadScope, run_id: string): Promise<Checkpoint | null>;
  /**
   * The run's checkpoints in scope, newest written first, starting after the one with id `before` (none
   * when that one is not among them), at most `limit`.
   */
  listCheckpoints(
    scope: ReadScope,
    run_id: string,
    page: { readonly before: string | null; readonly limit: number },
  ): Promise<Checkpoint[]>;

  /** The item, expired or not. */
  getMemory(scope: Scope, namespace: string, key: string): Promise<MemoryItem | null>;
  /** Live items of the namespace whose key starts with the prefix, ascending by key. */
  listMemory(
    scope: Scope,
    namespace: string,
    filter: MemoryFilter,
    page: PageRequest,
  ): Promise<Listed<MemoryItem>[]>;

  /** The run's events of the session in scope with seq > after_seq, ascending, at most `limit`. */
  listRunEvents(scope: ReadScope, query: RunEventQuery): Promise<RunEventRow[]>;

  getLease(scope: Scope, name: string): Promise<LeaseRow | null>;
  getRequestKey(scope: Scope, key: string): Promise<RequestKeyRow | null>;
}

export interface DriverWrites {
  insertSession(session: Session): Promise<boolean>;
  /** While the stored session has `previous.version` and `previous.expires_at`. */
  replaceSession(next: Session, previous: Session): Promise<boolean>;
  /** Removes the session and its messages. */
  deleteSession(session: Session): Promise<void>;
  /** Appends messages whose seq follow the session's last. */
  appendMessages(session: Session, messages: readonly Message[]): Promise<void>;

  insertTask(task: Task): Promise<boolean>;
  /** While the stored task has `previous.version`. */
  replaceTask(next: Task, previous: Task): Promise<boolean>;
  addTaskEvent(event: StoredTaskEvent): Promise<void>;

  /** False also when the idempotency key is taken (the core reads which). */
  insertAction(action: Action): Promise<boolean>;
  /** While the stored action has `previous.status` and `previous.attempts`. */
  replaceAction(next: Action, previous: Action): Promise<boolean>;

  insertCheckpoint(checkpoint: Checkpoint): Promise<boolean>;
  deleteCheckpoints(scope: ReadScope, run_id: string, ids: readonly string[]): Promise<void>;

  putMemory(item: MemoryItem): Promise<void>;
  deleteMemory(scope: Scope, namespace: string, key: string): Promise<void>;

  /**
   * Appends events of one run of a session (every row names the same tenant, user, session and run; `seq`
   * is absent): numbered after the last stored event of that session's run, in the order given. Called at
   * most once per transaction; appends to one run come from one writer at a time (a run holds its
   * session's lease), and two at once may fail on a taken seq, writing nothing.
   */
  appendRunEvents(rows: readonly Omit<RunEventRow, 'seq'>[]): Promise<void>;

  /** While the stored lease is `previous` (null: none stored). */
  putLease(scope: Scope, name: string, next: LeaseRow, previous: LeaseRow | null): Promise<boolean>;
  /** While the stored lease is `previous`. */
  deleteLease(scope: Scope, name: string, previous: LeaseRow): Promise<boolean>;
  /** While the stored key is `previous` (null: none stored). */
  putRequestKey(
    scope: Scope,
    key: string,
    next: RequestKeyRow,
    previous: RequestKeyRow | null,
  ): Promise<boolean>;
  deleteRequestKey(scope: Scope, key: string): Promise<void>;
}

export interface DriverTx extends DriverReads, DriverWrites {
  /**
   * Optional, for a driver with `listsAfterCommit`: the session's open tasks (newest first, at most `limit`)
   * as the transaction's writes leave them, from rows the driver already knows, checked unchanged with the
   * writes; null when it cannot tell (the core then lists them after the commit).
   */
  knownOpenTasks?(scope: Scope, session_id: string, limit: number): Task[] | null;
}

/** What a session head read asks besides the session and its newest message. */
export interface HeadReads {
  /** The scope's open tasks, at most this many; null: none. */
  readonly openTasks: number | null;
  readonly nextRun: boolean;
}

/**
 * Reads a driver may do in fewer round trips than the core's generic path. A fast path answers exactly
 * what the generic path answers (the conformance suite runs both).
 */
export interface DriverFastPaths {
  /** getSessionHead in one read: null when the session is not in scope or expired at `now` (ISO-8601). */
  sessionHead?(scope: ReadScope, id: string, reads: HeadReads, now: string): Promise<SessionHead | null>;
  /**
   * sessionHead with the lease's row inserted first, in one statement, when the session is there and no
   * row of the lease is. `taken`: inserted; `fresh`: the reads saw no row of the lease (when one was freed
   * between the reads' snapshot and the insert, the core reads the head again). Never takes a lease for a
   * head it answers null.
   */
  sessionHeadLeased?(
    scope: Scope,
    id: string,
    reads: HeadReads,
    lease: { readonly name: string; readonly owner: string; readonly expires_at: string },
    now: string,
  ): Promise<{ head: SessionHead | null; taken: boolean; fresh: boolean }>;
}

/** Work across all tenants, on the storage as a whole: the sweeps and the gauges' counts. */
export interface DriverMaintenance {
  /**
   * Removes up to `limit` sessions expired at `now_ms` with their messages, and expired memory items, leases
   * and request keys, and the events of runs whose newest event expired.
   */
  sweepExpired(now_ms: number, limit: number): Promise<number>;
  /** Sessions not expired at `now_ms` by status; `expired` is 0. */
  sessionStats(now_ms: number): Promise<Record<SessionStatus, number>>;
  actionStats(): Promise<ActionStats>;
  sweepRetention(retention: CheckedRetention): Promise<RetentionSweep>;
}

export interface StoreDriver extends DriverMaintenance {
  /** The store's name in `StateStore.adapter` and in every error message. */
  readonly name: string;
  readonly capabilities: StoreCapabilities;
  /**
   * True when a list read inside a transaction does not see the transaction's own writes (an optimistic
   * driver that sends its writes at commit): the core then lists a turn's open tasks right after it commits.
   */
  readonly listsAfterCommit?: boolean;
  /** Optional fast paths (absent: the generic path). */
  readonly fast?: DriverFastPaths;
  /**
   * Runs `work` atomically (see the header). `single`: each write call of the work is an insert that may
   * find its id taken or a compare-and-swap against what it read, and the work acts on that call's answer
   * (so it is right without isolation between its calls): a driver whose every write call is atomic by
   * itself may run it without a transaction.
   */
  transaction<T>(work: (tx: DriverTx) => Promise<T>, options?: { readonly single?: boolean }): Promise<T>;
  /**
   * Runs reads. Each read call sees committed data; a driver may run them without a snapshot around them
   * (the core's reads hold no rule that needs one), and must then retry a read that met a half-removed
   * record (a checkpoint whose blobs a prune took) on one snapshot.
   */
  read<T>(work: (tx: DriverReads) => Promise<T>): Promise<T>;
  /** The key that seals list cursors: the same for every instance of one storage. */
  cursorKey(): Promise<Buffer>;
  ping(): Promise<boolean>;
  close(): Promise<void>;
}
