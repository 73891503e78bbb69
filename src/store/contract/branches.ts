/**
 * Branches: a session forked from another at a message, or rewound to one. A fork stores a reference to
 * the history it starts from, never a copy: its messages are the inherited prefix, then its own.
 */
import type { Session } from '../../core/model.js';
import type { Page, PageQuery, ReadScope } from './common.js';

/** Where a fork starts: after message `at_seq`, or at the messages a checkpoint of the session had seen. */
export interface ForkPoint {
  /** 0..the session's last seq: the fork sees messages 1..at_seq. */
  readonly at_seq?: number;
  /** A checkpoint of the session: the fork sees the messages written before it. */
  readonly checkpoint_id?: string;
}

export interface NewFork extends ForkPoint {
  /** Optional caller-chosen id (`sess_` + 128 bits); generated when absent. */
  readonly id?: string;
  /** The fork's sliding TTL in seconds; the original's when absent. */
  readonly ttl_seconds?: number;
}

export interface Rewind {
  /** 0..the session's last seq: the session continues after message `at_seq`. */
  readonly at_seq: number;
  /** When given, the session's current version (else `version_conflict`). */
  readonly expected_version?: number;
}

export interface RewindResult {
  /** The session, continuing after `at_seq` (new version). */
  readonly session: Session;
  /** A new session, `paused`, holding what came after `at_seq` (forked from the session at its last seq). */
  readonly branch: Session;
}

/**
 * Forks copy on write. Tasks of the session are copied as they stood at the fork point (before the message
 * after it was written); actions that had succeeded by then are named in the copy (`data['agentstate.fork']`)
 * and never run by it; a fork point at which an action was PENDING or UNKNOWN, or a task EXECUTING, is
 * refused (`invalid_request`), and so is rewinding an ended session. Expiring or deleting either side leaves the other's history readable.
 */
export interface BranchCalls {
  forkSession(scope: ReadScope, id: string, input: NewFork): Promise<Session>;
  /** Moves the session back to `at_seq`; what came after stays readable in `branch`. */
  rewindSession(scope: ReadScope, id: string, input: Rewind): Promise<RewindResult>;
  /**
   * The live sessions forked from this one (rewinds' branches included), oldest first, paged (a page may
   * hold fewer than `limit` when branches expired since).
   */
  listBranches(scope: ReadScope, id: string, query?: PageQuery): Promise<Page<Session>>;
}
