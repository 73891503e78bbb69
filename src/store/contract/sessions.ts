/** Sessions: a conversation's record, with a sliding time to live. */
import type { JsonObject } from '../../core/json.js';
import type { Message, Session, SessionStatus, Task } from '../../core/model.js';
import type { NextRun } from '../../core/run-id.js';
import type { Page, PageQuery, ReadScope, Scope } from './common.js';
import type { Lease } from './coordination.js';

export type { NextRun };

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
  /**
   * With `lease` asked: the lease as `acquireLease` grants it, or null when another owner holds it. A head
   * given with a lease was read after the lease was taken.
   */
  readonly lease?: Lease | null;
}

/** The lease `getSessionHead` takes before it reads (SessionHeadOptions.lease): acquireLease's arguments. */
export interface HeadLease {
  readonly name: string;
  readonly owner: string;
  readonly ttl_ms: number;
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
  /**
   * Takes this lease first (as `acquireLease` does; the scope must name a user), then reads the head; on
   * PostgreSQL both in one statement. No lease is taken when the session is not there (the head is null).
   */
  readonly lease?: HeadLease;
}

export interface SessionCalls {
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
}
