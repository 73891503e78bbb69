/**
 * The retention script: deletes one user's due records of one kind, each re-checked against the record
 * itself, in one atomic call in the user's slot, so two sweepers never delete or count one record twice.
 *
 * Every key it touches must be one it was given (KEYS), as Redis Cluster requires; which keys a sweep needs
 * is only known from the data (a task's actions, its checkpoints' runs, the other checkpoints of those
 * runs). So the script first works out everything it would do, reading only given keys; when it needs a key
 * it was not given, it writes nothing and answers {0, {missing key names}}, and the caller calls again with
 * those keys added (a few rounds; the data read in the last one is what is deleted).
 *
 * Key names are built as keys.ts builds them: the user's base, then `t:<id>`, `at:<id>`, `cr:<escaped run>`...
 *
 * KEYS: the user's age hints of the kind swept (rt, ra or rc) first, then any other keys of the user.
 * ARGV: kind (`tasks`, `actions` or `checkpoints`), the user's key base (`P:{t:u}:`), cutoff (ms; records
 * before it go), budget (most records of the kind to delete).
 *
 * A due hint is checked against its record: a missing record drops the hint; a task changed since, a
 * checkpoint or action whose time is not before the cutoff, re-scores it; an action not finished drops it
 * (it gets a new hint when it finishes). Otherwise the record goes with every index entry in the user's
 * slot: a task with its events, its actions and its checkpoints; an action with its idempotency key (when
 * the key still names it); a checkpoint with the blobs no remaining checkpoint of its run needs. A run left
 * without checkpoints loses its blobs, sequence and latest manifest; a run that lost its latest checkpoint
 * gets the manifest of the new latest one and a bumped sequence (a put that read the old one starts again).
 *
 * Answers {1, {tasks, actions, checkpoints deleted, due hints looked at}, lowest score left in KEYS[1] or
 * '', {task id, index
 * member, ...}, {action id, index member, ...}, {checkpoint id, ...}, {runs left empty}}: what the caller
 * removes from the tenant's indexes (another slot) and how it re-scores the user there.
 */
export const RETENTION_LUA = `
local kind, B = ARGV[1], ARGV[2]
local cutoff, budget = tonumber(ARGV[3]), tonumber(ARGV[4])
local given, missing, asked = {}, {}, {}
for i = 1, #KEYS do given[KEYS[i]] = true end

-- The key B..suffix when given; otherwise nil, and the name is noted as missing.
local function key(suffix)
  local name = B .. suffix
  if given[name] then return name end
  if not asked[name] then
    asked[name] = true
    missing[#missing + 1] = name
  end
  return nil
end

local function esc(s)
  return (string.gsub(s, '[%%{}:]', function(c) return string.format('%%%02X', string.byte(c)) end))
end

-- Milliseconds of an ISO-8601 UTC timestamp as toISOString writes it (nil for anything else).
local function iso_ms(s)
  if type(s) ~= 'string' then return nil end
  local y, mo, d, h, mi, sec, frac = string.match(s, '^(%d%d%d%d)%-(%d%d)%-(%d%d)T(%d%d):(%d%d):(%d%d)%.?(%d*)Z$')
  if not y then return nil end
  y, mo, d = tonumber(y), tonumber(mo), tonumber(d)
  if mo <= 2 then y = y - 1 end
  local era = math.floor(y / 400)
  local yoe = y - era * 400
  local doy = math.floor((153 * ((mo + 9) % 12) + 2) / 5) + d - 1
  local days = era * 146097 + yoe * 365 + math.floor(yoe / 4) - math.floor(yoe / 100) + doy - 719468
  local ms = 0
  if frac ~= '' then ms = tonumber(string.sub(frac .. '00', 1, 3)) end
  return ((days * 24 + tonumber(h)) * 60 + tonumber(mi)) * 60000 + tonumber(sec) * 1000 + ms
end

-- The lex index member of a record (keys.ts indexMember): created ms padded to 15 digits, ':', id.
local function member(iso, id)
  local digits = string.format('%d', iso_ms(iso))
  return string.rep('0', 15 - #digits) .. digits .. ':' .. id
end

local function present(value)
  return value ~= nil and value ~= false and value ~= cjson.null
end

local tasks, actions, checkpoints = {}, {}, {}
local planned = {}
local fixes = {}
local runs, run_names = {}, {}

local function fix(id, score)
  fixes[#fixes + 1] = {id, score}
end

local function plan_action(id, record, index_member)
  if planned[id] then return end
  planned[id] = true
  actions[#actions + 1] = {id, index_member or member(record.created_at, id), record.status,
    record.idempotency_key, record.task_id}
  key('ast:' .. record.status)
  key('at:' .. record.task_id)
end

local function plan_checkpoint(id, run, task)
  if planned[id] then return end
  planned[id] = true
  checkpoints[#checkpoints + 1] = {id, run, task}
  if present(task) then key('ct:' .. task) end
  local r = runs[run]
  if not r then
    r = {gone = {}}
    runs[run] = r
    run_names[#run_names + 1] = run
  end
  r.gone[id] = true
end

local hints = KEYS[1]
local due = redis.call('ZRANGEBYSCORE', hints, '-inf', '(' .. ARGV[3], 'LIMIT', 0, budget)

if kind == 'tasks' then
  for _, id in ipairs(due) do
    local t, te, at, ct = key('t:' .. id), key('te:' .. id), key('at:' .. id), key('ct:' .. id)
    if t then
      local d = redis.call('HGET', t, 'd')
      if not d then
        fix(id, false)
      else
        local task = cjson.decode(d)
        local ms = iso_ms(task.updated_at)
        if not ms then
          fix(id, false)
        elseif ms >= cutoff then
          fix(id, ms)
        else
          tasks[#tasks + 1] = {id, member(task.created_at, id), task.state, task.session_id}
          key('tst:' .. task.state)
          if present(task.session_id) then key('tss:' .. task.session_id) end
          if at then
            for _, m in ipairs(redis.call('ZRANGE', at, 0, -1)) do
              local aid = string.sub(m, string.find(m, ':', 1, true) + 1)
              local a = key('a:' .. aid)
              if a then
                local ad = redis.call('HGET', a, 'd')
                if ad then plan_action(aid, cjson.decode(ad), m) end
              end
            end
          end
          if ct then
            for _, cid in ipairs(redis.call('SMEMBERS', ct)) do
              local c = key('c:' .. cid)
              if c then
                local row = redis.call('HMGET', c, 'run', 'task')
                if row[1] then plan_checkpoint(cid, row[1], row[2]) end
              end
            end
          end
        end
      end
    end
  end
elseif kind == 'actions' then
  for _, id in ipairs(due) do
    local a = key('a:' .. id)
    if a then
      local d = redis.call('HGET', a, 'd')
      local action = d and cjson.decode(d)
      local ms = action and iso_ms(action.updated_at)
      if not ms or (action.status ~= 'SUCCESS' and action.status ~= 'FAILED') then
        fix(id, false)
      elseif ms >= cutoff then
        fix(id, ms)
      else
        plan_action(id, action, nil)
      end
    end
  end
else
  for _, id in ipairs(due) do
    local c = key('c:' .. id)
    if c then
      local row = redis.call('HMGET', c, 'd', 'run', 'task')
      local ms = row[1] and row[2] and iso_ms(cjson.decode(row[1]).created_at)
      if not ms then
        fix(id, false)
      elseif ms >= cutoff then
        fix(id, ms)
      else
        plan_checkpoint(id, row[2], row[3])
      end
    end
  end
end

-- Per run touched: the checkpoints kept, the blobs their manifest chains need, the new latest manifest.
for _, name in ipairs(run_names) do
  local r = runs[name]
  r.cr, r.cb = key('cr:' .. esc(name)), key('cb:' .. esc(name))
  if r.cr and r.cb then
    local ids = redis.call('ZRANGE', r.cr, 0, -1)
    r.keep, r.live = {}, {}
    for _, id in ipairs(ids) do
      if not r.gone[id] then r.keep[#r.keep + 1] = id end
    end
    r.latest_gone = #ids > 0 and r.gone[ids[#ids]] == true
    for i, id in ipairs(r.keep) do
      local c = key('c:' .. id)
      if c then
        local m = redis.call('HGET', c, 'm')
        if m then
          if i == #r.keep then r.manifest = m end
          for _, ref in pairs(cjson.decode(m)) do
            local h = ref.h
            while h and not r.live[h] do
              r.live[h] = true
              local blob = redis.call('HGET', r.cb, h)
              if not blob then break end
              local base = string.sub(blob, 1, string.find(blob, '|', 1, true) - 1)
              if base == '' then h = nil else h = base end
            end
          end
        end
      end
    end
  end
end

local ts, as, ak, cq, cm = key('ts'), key('as'), key('ak'), key('cq'), key('cm')
local rt, ra, rc = key('rt'), key('ra'), key('rc')
for _, t in ipairs(tasks) do
  if present(t[4]) then key('tss:' .. t[4]) end
end
if #missing > 0 then return {0, missing} end

for _, f in ipairs(fixes) do
  if f[2] then redis.call('ZADD', hints, f[2], f[1]) else redis.call('ZREM', hints, f[1]) end
end

local out_tasks, out_actions, out_checkpoints, emptied = {}, {}, {}, {}
for _, t in ipairs(tasks) do
  local id, m = t[1], t[2]
  redis.call('DEL', B .. 't:' .. id, B .. 'te:' .. id, B .. 'at:' .. id, B .. 'ct:' .. id)
  redis.call('ZREM', ts, m)
  redis.call('ZREM', B .. 'tst:' .. t[3], m)
  if present(t[4]) then redis.call('ZREM', B .. 'tss:' .. t[4], m) end
  redis.call('ZREM', rt, id)
  out_tasks[#out_tasks + 1] = id
  out_tasks[#out_tasks + 1] = m
end
for _, a in ipairs(actions) do
  local id, m = a[1], a[2]
  redis.call('DEL', B .. 'a:' .. id)
  redis.call('ZREM', as, m)
  redis.call('ZREM', B .. 'at:' .. a[5], m)
  redis.call('ZREM', B .. 'ast:' .. a[3], m)
  if redis.call('HGET', ak, a[4]) == id then redis.call('HDEL', ak, a[4]) end
  redis.call('ZREM', ra, id)
  out_actions[#out_actions + 1] = id
  out_actions[#out_actions + 1] = m
end
for _, c in ipairs(checkpoints) do
  local id = c[1]
  redis.call('DEL', B .. 'c:' .. id)
  redis.call('ZREM', rc, id)
  redis.call('ZREM', runs[c[2]].cr, id)
  if present(c[3]) then redis.call('SREM', B .. 'ct:' .. c[3], id) end
  out_checkpoints[#out_checkpoints + 1] = id
end
for _, name in ipairs(run_names) do
  local r = runs[name]
  if #r.keep == 0 then
    redis.call('DEL', r.cr, r.cb)
    redis.call('HDEL', cq, name)
    redis.call('HDEL', cm, name)
    emptied[#emptied + 1] = name
  else
    local dead = {}
    for _, h in ipairs(redis.call('HKEYS', r.cb)) do
      if not r.live[h] then dead[#dead + 1] = h end
    end
    for i = 1, #dead, 500 do
      redis.call('HDEL', r.cb, unpack(dead, i, math.min(i + 499, #dead)))
    end
    if r.latest_gone then
      if r.manifest then redis.call('HSET', cm, name, r.manifest) else redis.call('HDEL', cm, name) end
      redis.call('HINCRBY', cq, name, 1)
    end
  end
end

local low = redis.call('ZRANGE', hints, 0, 0, 'WITHSCORES')
return {1, {#tasks, #actions, #checkpoints, #due}, low[2] or '', out_tasks, out_actions, out_checkpoints, emptied}
`;
