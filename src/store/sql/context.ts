/** What every shared SQL function receives: the adapter's name and checks, its clock, randomness, defaults. */
import { type Clock, isoAt, type RandomSource } from '../../core/clock.js';
import { AgentStateError } from '../../core/errors.js';
import type { Checks } from '../core/checks.js';
import type { Manifest } from '../shared/checkpoint-codec.js';
import type { ReadScope } from '../types.js';
import type { SqlParam } from './executor.js';
import type { CursorKey } from './paging.js';

export interface SqlContext {
  readonly adapter: string;
  readonly v: Checks;
  readonly clock: Clock;
  readonly random: RandomSource;
  readonly defaultSessionTtlSeconds: number;
  /** The last checkpoint this store wrote in each run (see checkpoints.ts): PostgreSQL skips a read with it. */
  readonly lastCheckpoints: LastCheckpoints;
  /**
   * Appended to the read that checks a session a new record names (attach.ts): PostgreSQL's ' FOR KEY
   * SHARE' (no delete of that session until the write commits); '' for SQLite, whose writers are serial.
   */
  readonly sessionLock?: string;
  /**
   * True when the sessions are not in this database (the tiered store's PostgreSQL half: they live in
   * Redis, and the tiered store checks the session ids a write names itself).
   */
  readonly sessionsElsewhere?: boolean;
  /** Seals and opens the lists' cursors. */
  readonly cursorKey: CursorKey;
}

export function nowIso(ctx: SqlContext): string {
  return isoAt(ctx.clock.now());
}

export function isoAfter(ctx: SqlContext, ms: number): string {
  return isoAt(ctx.clock.now() + ms);
}

export function notFound(ctx: SqlContext, kind: string, id: string): AgentStateError {
  return new AgentStateError('not_found', `[${ctx.adapter}] ${kind} ${id} not found`, {
    details: { kind, id },
  });
}

export function conflict(ctx: SqlContext, kind: string, id: string): AgentStateError {
  return new AgentStateError('conflict', `[${ctx.adapter}] ${kind} ${id} already exists`, {
    details: { id },
  });
}

/** `tenant_id = ? [AND user_id = ?]` for a scope, with its parameters; `prefix` qualifies the columns. */
export function scopeWhere(scope: ReadScope, prefix = ''): { sql: string; params: SqlParam[] } {
  if (scope.user_id === undefined) return { sql: `${prefix}tenant_id = ?`, params: [scope.tenant_id] };
  return { sql: `${prefix}tenant_id = ? AND ${prefix}user_id = ?`, params: [scope.tenant_id, scope.user_id] };
}

/**
 * The scope as a check on a row found by its unique id, written so that no index serves it (`tenant_id || ''`
 * is the column's value, but not a column an index leads with). PostgreSQL's generic plan of
 * `id = $1 AND tenant_id = $2 AND user_id = $3` costs the user's index (tenant_id, user_id, ord) as the id's
 * when most users have few rows, may take it, and then reads every row of a user who has thousands.
 */
export function scopeCheck(scope: ReadScope, prefix = ''): { sql: string; params: SqlParam[] } {
  if (scope.user_id === undefined) return { sql: `${prefix}tenant_id || '' = ?`, params: [scope.tenant_id] };
  return {
    sql: `${prefix}tenant_id || '' = ? AND ${prefix}user_id || '' = ?`,
    params: [scope.tenant_id, scope.user_id],
  };
}

/** A run's last checkpoint as this store wrote it: its id and manifest. */
export interface WrittenCheckpoint {
  readonly id: string;
  readonly manifest: Manifest;
}

/** Runs remembered: the oldest is dropped past this (a manifest is a few hundred bytes). */
const LAST_CHECKPOINT_RUNS = 10_000;

/** Per store, by (tenant, user, run), least recently written first. */
export class LastCheckpoints {
  private readonly runs = new Map<string, WrittenCheckpoint>();

  get(key: string): WrittenCheckpoint | undefined {
    return this.runs.get(key);
  }

  set(key: string, written: WrittenCheckpoint): void {
    this.runs.delete(key);
    if (this.runs.size >= LAST_CHECKPOINT_RUNS) this.runs.delete(this.runs.keys().next().value as string);
    this.runs.set(key, written);
  }

  delete(key: string): void {
    this.runs.delete(key);
  }
}
