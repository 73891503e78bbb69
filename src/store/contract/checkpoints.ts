/** Checkpoints: a run's state, step by step, newest first. */
import type { JsonObject } from '../../core/json.js';
import type { Checkpoint } from '../../core/model.js';
import type { Page, ReadScope, Scope } from './common.js';

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

export interface CheckpointCalls {
  putCheckpoint(scope: Scope, input: NewCheckpoint): Promise<Checkpoint>;
  getCheckpoint(scope: ReadScope, id: string): Promise<Checkpoint | null>;
  latestCheckpoint(scope: ReadScope, run_id: string): Promise<Checkpoint | null>;
  /** Newest first. */
  listCheckpoints(scope: ReadScope, run_id: string, query?: CheckpointQuery): Promise<Page<Checkpoint>>;
  /** Keeps the newest `keep` checkpoints of the run; returns how many were removed. */
  pruneCheckpoints(scope: ReadScope, run_id: string, keep: number): Promise<number>;
}
