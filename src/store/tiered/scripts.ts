/**
 * The tiered store's own Redis scripts (the session and message scripts are the Redis adapter's).
 * Defined once per connection with `defineCommand` (EVALSHA, EVAL after a server restart).
 */
import type { Redis } from 'ioredis';
import { AgentStateError } from '../../core/errors.js';

/**
 * A hot task copy: hash `v` (highest version known), `d` (task JSON; absent = tombstone).
 * KEYS[1] hot key. ARGV: mode, version, json ('' = tombstone), ttl ms.
 * - hold: before a durable write naming `version`: drop `d`, raise `v` to at least `version`.
 * - put: after PostgreSQL returned the task at `version` (write-through, or a read filling the copy):
 *   written only when `version` is above `v`, so a late or stale writer never replaces a newer copy and
 *   a read that raced a durable write never brings back the version that write replaced.
 */
export const HOT_LUA = `
local cur = tonumber(redis.call('HGET', KEYS[1], 'v') or '0')
local v = tonumber(ARGV[2])
if ARGV[1] == 'hold' then
  if v > cur then redis.call('HSET', KEYS[1], 'v', ARGV[2]) end
  redis.call('HDEL', KEYS[1], 'd')
  redis.call('PEXPIRE', KEYS[1], ARGV[4])
  return 1
end
if v <= cur then return 0 end
if ARGV[3] == '' then
  redis.call('HDEL', KEYS[1], 'd')
  redis.call('HSET', KEYS[1], 'v', ARGV[2])
else
  redis.call('HSET', KEYS[1], 'v', ARGV[2], 'd', ARGV[3])
end
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1
`;

/** Frees a session lock only when `token` still holds it. KEYS[1] lock key, ARGV[1] token. */
export const UNLOCK_LUA = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`;

export type TieredScript = (...args: (string | number)[]) => Promise<unknown>;

export interface TieredScripts {
  readonly hot: TieredScript;
  readonly unlock: TieredScript;
}

export function defineScripts(redis: Redis): TieredScripts {
  redis.defineCommand('agentstateTieredHot', { numberOfKeys: 1, lua: HOT_LUA });
  redis.defineCommand('agentstateTieredUnlock', { numberOfKeys: 1, lua: UNLOCK_LUA });
  const bound = (name: string): TieredScript => {
    const fn = (redis as unknown as Record<string, TieredScript | undefined>)[name];
    if (fn === undefined) throw new AgentStateError('internal', `[tiered] script ${name} is not defined`);
    return fn.bind(redis);
  };
  return { hot: bound('agentstateTieredHot'), unlock: bound('agentstateTieredUnlock') };
}
