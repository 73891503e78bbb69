/**
 * The Lua scripts. They only check revisions and existence and then write what TypeScript prepared:
 * every rule (plain JSON, ids, transitions, lengths) is checked before a script runs.
 */

/**
 * Applies one plan atomically. ARGV: number of checks, then per check (key index, field, present 0/1,
 * expected); then number of writes, then per write (command, key index, argument count, arguments...).
 * The pseudo-command EXTEND sets a TTL (ms) on an existing key unless it already lives longer.
 * A check compares HGET key field with the expected value (or asserts the field is absent). When one
 * fails, nothing is written and the script answers {0, check number}; otherwise {1, replies...}.
 */
export const PLAN_LUA = `
local p = 1
local checks = tonumber(ARGV[p]); p = p + 1
for i = 1, checks do
  local key = KEYS[tonumber(ARGV[p])]
  local current = redis.call('HGET', key, ARGV[p + 1])
  if ARGV[p + 2] == '1' then
    if current ~= ARGV[p + 3] then return {0, i} end
  elseif current then
    return {0, i}
  end
  p = p + 4
end
local writes = tonumber(ARGV[p]); p = p + 1
local out = {1}
for i = 1, writes do
  local cmd = ARGV[p]
  local key = KEYS[tonumber(ARGV[p + 1])]
  local n = tonumber(ARGV[p + 2])
  p = p + 3
  local args = {}
  for j = 1, n do args[j] = ARGV[p + j - 1] end
  p = p + n
  local reply = 0
  if cmd == 'EXTEND' then
    local current = redis.call('PTTL', key)
    if current == -1 or (current >= 0 and current < tonumber(args[1])) then
      reply = redis.call('PEXPIRE', key, args[1])
    end
  else
    reply = redis.call(cmd, key, unpack(args))
    if type(reply) == 'table' then reply = 0 end
  end
  out[#out + 1] = reply
end
return out
`;

/**
 * Sweeps one session when it is expired. KEYS: session, messages, the user's session index.
 * ARGV: now (ms), index member. Answers -1 when removed (or already gone), else its expiry (ms).
 */
export const SWEEP_SESSION_LUA = `
local expires = redis.call('HGET', KEYS[1], 'x')
if expires and tonumber(expires) > tonumber(ARGV[1]) then return tonumber(expires) end
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('ZREM', KEYS[3], ARGV[2])
return -1
`;

/**
 * Sweeps one run's events when its newest event expired. KEYS: the run's expiry hash, its event list.
 * ARGV: now (ms). Answers -1 when removed (or already gone), else the newest event's expiry (ms).
 */
export const SWEEP_RUN_EVENTS_LUA = `
local expires = redis.call('HGET', KEYS[1], 'x')
if expires and tonumber(expires) > tonumber(ARGV[1]) then return tonumber(expires) end
redis.call('DEL', KEYS[1], KEYS[2])
return -1
`;

/**
 * Removes members of a sorted set whose score is still at most ARGV[1] (a hint a writer moved to a later
 * expiry in the meantime stays). KEYS: the set. ARGV: now (ms), then the members. Answers how many went.
 */
export const REMOVE_DUE_LUA = `
local n = 0
for i = 2, #ARGV do
  local score = redis.call('ZSCORE', KEYS[1], ARGV[i])
  if score and tonumber(score) <= tonumber(ARGV[1]) then n = n + redis.call('ZREM', KEYS[1], ARGV[i]) end
end
return n
`;

/**
 * Reads checkpoints with every blob their manifests need, walking append chains, in one call.
 * KEYS: the run's blob hash, then checkpoint keys. ARGV: hashes the caller holds with every blob under
 * them (not sent, not walked). Answers {{d, m, d, m, ...}, {hash, blob, ...}}.
 */
export const CHECKPOINT_READ_LUA = `
local records = {}
local blobs = {}
local seen = {}
for i = 1, #ARGV do seen[ARGV[i]] = true end
for i = 2, #KEYS do
  local row = redis.call('HMGET', KEYS[i], 'd', 'm')
  records[#records + 1] = row[1]
  records[#records + 1] = row[2]
  if row[2] then
    for _, ref in pairs(cjson.decode(row[2])) do
      local h = ref.h
      while h and not seen[h] do
        seen[h] = true
        local blob = redis.call('HGET', KEYS[1], h)
        if not blob then break end
        blobs[#blobs + 1] = h
        blobs[#blobs + 1] = blob
        local bar = string.find(blob, '|', 1, true)
        local base = string.sub(blob, 1, bar - 1)
        if base == '' then h = nil else h = base end
      end
    end
  end
end
return {records, blobs}
`;

/**
 * Removes ids from the tenant's owner hash, each only while it still names this user (a run id can be
 * shared by users of one tenant; the entry belongs to whoever wrote it first). KEYS: the owner hash.
 * ARGV: user id, then the ids. Answers how many were removed.
 */
export const RELEASE_OWNERS_LUA = `
local n = 0
for i = 2, #ARGV do
  if redis.call('HGET', KEYS[1], ARGV[i]) == ARGV[1] then n = n + redis.call('HDEL', KEYS[1], ARGV[i]) end
end
return n
`;

/**
 * Claims ids in the tenant's owner hash for one user: all of them, or none when one already names another
 * user (ids are unique per tenant across its users, as in the SQL stores). KEYS: the owner hash. ARGV: user
 * id, then the ids. Answers 0 when all are claimed (an id already this user's stays), else the 1-based
 * position of the first id another user holds.
 */
export const CLAIM_OWNERS_LUA = `
for i = 2, #ARGV do
  local owner = redis.call('HGET', KEYS[1], ARGV[i])
  if owner and owner ~= ARGV[1] then return i - 1 end
end
for i = 2, #ARGV do redis.call('HSETNX', KEYS[1], ARGV[i], ARGV[1]) end
return 0
`;
