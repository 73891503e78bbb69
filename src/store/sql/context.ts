/**
 * What the SQL driver's statements share: a scope as a condition, and the last checkpoint this store wrote
 * in each run (what the next put of the run is encoded against).
 */

import { RecentMap } from '../../core/recent-map.js';
import type { Manifest } from '../shared/checkpoint-codec.js';
import type { ReadScope } from '../types.js';
import type { SqlParam } from './executor.js';

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
  private readonly runs = new RecentMap<string, WrittenCheckpoint>(LAST_CHECKPOINT_RUNS);

  get(key: string): WrittenCheckpoint | undefined {
    return this.runs.get(key);
  }

  set(key: string, written: WrittenCheckpoint): void {
    this.runs.set(key, written);
  }

  delete(key: string): void {
    this.runs.delete(key);
  }
}
