/**
 * The sessions a durable write names (a task's, an action's, a checkpoint's `session_id`) live in Redis,
 * the write goes to PostgreSQL: each must be a live session of the record's owner (ended or not), else the
 * write is refused with `not_found` naming the session, as in every other store, and nothing is written.
 * The check and the write happen holding those sessions' turn locks (lock.ts), so the session cannot be
 * deleted (and its id taken by another user) between the check and the PostgreSQL commit.
 */
import { AgentStateError } from '../../core/errors.js';
import type { Session } from '../../core/model.js';
import { userKeys } from '../redis/scope.js';
import type { Scope } from '../types.js';
import type { TurnDeps } from './turn.js';

/** The distinct session ids named (null and undefined left out). */
export function named(ids: readonly (string | null | undefined)[]): string[] {
  return [...new Set(ids.filter((id): id is string => typeof id === 'string'))];
}

export function sessionNotFound(id: string): AgentStateError {
  return new AgentStateError('not_found', `[tiered] session ${id} not found`, {
    details: { kind: 'session', id },
  });
}

/** Those of `ids` that are not a live session of `owner` (one Redis round trip). */
export async function missingSessions(d: TurnDeps, owner: Scope, ids: readonly string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const keys = userKeys(d.redis, owner.tenant_id, owner.user_id);
  const rows = await Promise.all(ids.map((id) => d.redis.redis.hget(keys.session(id), 'd')));
  const now = d.redis.clock.now();
  return ids.filter((_, i) => {
    const json = rows[i];
    return json === null || json === undefined || Date.parse((JSON.parse(json) as Session).expires_at) <= now;
  });
}

/**
 * Runs `work` (the durable write) holding the turn locks of the sessions `ids` after checking them; a
 * missing one is `not_found`, unless `excuse(id)` (a begun action whose key exists: the existing action is
 * the answer, as in the other stores) returns what to answer instead. No lock when no session is named.
 */
export async function withOwnSessions<T>(
  d: TurnDeps,
  owner: Scope,
  ids: readonly string[],
  work: () => Promise<T>,
  excuse: (missing: readonly string[]) => Promise<(() => Promise<T>) | null> = async () => null,
): Promise<T> {
  if (ids.length === 0) return work();
  return d.locks.with(owner.tenant_id, ids, async () => {
    const missing = await missingSessions(d, owner, ids);
    if (missing.length === 0) return work();
    const instead = await excuse(missing);
    if (instead === null) throw sessionNotFound(missing[0] as string);
    return instead();
  });
}
