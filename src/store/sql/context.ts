/** What every shared SQL function receives: the adapter's name and checks, its clock, randomness, defaults. */
import { type Clock, isoAt, type RandomSource } from '../../core/clock.js';
import { AgentStateError } from '../../core/errors.js';
import type { ReadScope } from '../types.js';
import type { SqlParam } from './executor.js';
import type { Checks } from './validate.js';

export interface SqlContext {
  readonly adapter: string;
  readonly v: Checks;
  readonly clock: Clock;
  readonly random: RandomSource;
  readonly defaultSessionTtlSeconds: number;
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
