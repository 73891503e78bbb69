/**
 * The Redis store's action counts, seen in Redis itself: every action write sets its entry in
 * `P:{stats}:ast:PENDING` / `ast:UNKNOWN` right after its script (read back before any actionStats call,
 * which would heal them), retention removes the entries of the actions it deleted, and actionStats drops
 * stale entries (action finished, deleted, or a malformed entry), at most HEAL_SAMPLE per set per call,
 * while an entry lost between the script and its MULTI comes back at the action's next write.
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.js';
import { actionStatsKey, HEAL_SAMPLE } from '../../src/store/redis/action-stats.js';
import { openRedisStore } from '../../src/store/redis/index.js';
import { escapeKeyPart } from '../../src/store/redis/keys.js';
import type { Scope, StateStore } from '../../src/store/types.js';
import { REDIS_URL, randomPrefix, removePrefix } from './redis-env.js';

const DAY_MS = 24 * 3600 * 1000;
const redis = new Redis(REDIS_URL);
afterAll(() => redis.disconnect());

describe('redis action counts', () => {
  let prefix = '';
  let store: StateStore;
  let clock: ManualClock;
  let scope: Scope;
  beforeEach(async () => {
    prefix = randomPrefix();
    clock = new ManualClock(Date.now() - 40 * DAY_MS);
    store = await openRedisStore(REDIS_URL, { clock, prefix });
    // braces and colons in ids: the entry escapes them like the key layout does
    scope = { tenant_id: `t:{${randomUUID()}}`, user_id: `u:%${randomUUID()}` };
  });
  afterEach(async () => {
    await store.close();
    await removePrefix(prefix);
  });

  const entry = (id: string) => `${escapeKeyPart(scope.tenant_id)}:${escapeKeyPart(scope.user_id)}:${id}`;
  const pendingKey = () => actionStatsKey(prefix, 'PENDING');
  const unknownKey = () => actionStatsKey(prefix, 'UNKNOWN');

  async function begin(taskId: string) {
    const { action } = await store.beginAction(scope, {
      task_id: taskId,
      type: 'tool_call',
      params: null,
      idempotency_key: randomUUID(),
    });
    return action;
  }

  it('each write sets the entry right after its script; retention removes it', async () => {
    const task = await store.createTask(scope, { type: 'x' });
    const a = await begin(task.id);
    const b = await begin(task.id);
    expect(await redis.zscore(pendingKey(), entry(a.id))).toBe(String(Date.parse(a.created_at)));
    await store.markActionUnknown(scope, a.id, 'timeout');
    expect(await redis.zscore(pendingKey(), entry(a.id))).toBeNull();
    expect(await redis.zscore(unknownKey(), entry(a.id))).not.toBeNull();
    await store.resolveAction({ tenant_id: scope.tenant_id }, a.id, { status: 'SUCCESS', note: 'checked' });
    expect(await redis.zscore(unknownKey(), entry(a.id))).toBeNull();
    // begun and completed in one turn: one entry set to the last state, so none
    const turn = await store.commitTurn(scope, {
      begin_actions: [{ task_id: task.id, type: 'x', params: null, idempotency_key: 'turn' }],
    });
    const c = turn.actions[0];
    if (c === undefined) throw new Error('the turn began no action');
    expect(await redis.zscore(pendingKey(), entry(c.id))).not.toBeNull();
    await store.markActionUnknown(scope, c.id, 'timeout');
    expect(await redis.zcard(pendingKey())).toBe(1);
    expect(await redis.zrange(unknownKey(), 0, -1)).toEqual([entry(c.id)]);

    clock.advance(DAY_MS);
    const swept = await store.sweepRetention({ tasks_before: new Date(clock.now()).toISOString() }, 100);
    expect(swept).toEqual({ tasks: 1, actions: 3, checkpoints: 0 });
    expect(await redis.zscore(pendingKey(), entry(b.id))).toBeNull();
    expect(await redis.exists(pendingKey(), unknownKey())).toBe(0);
    expect(await store.actionStats()).toEqual({ pending: 0, unknown: 0 });
  });

  it('drops stale entries, at most HEAL_SAMPLE per set per call; a lost entry returns at the next write', async () => {
    const task = await store.createTask(scope, { type: 'x' });
    const live = await begin(task.id);
    const stuck = await begin(task.id);
    await store.markActionUnknown(scope, stuck.id, 'timeout');
    const done = await begin(task.id);
    await store.completeAction(scope, done.id, { status: 'SUCCESS' });
    expect(await store.actionStats()).toEqual({ pending: 1, unknown: 1 });

    // what a crash between a script and its MULTI, or writers finishing in the other order, leave behind
    await redis.zadd(unknownKey(), Date.parse(done.created_at), entry(done.id));
    await redis.zadd(pendingKey(), Date.parse(stuck.created_at), entry(stuck.id));
    await redis.zadd(unknownKey(), 0, 'not-an-entry');
    const ghosts = Array.from({ length: 2 * HEAL_SAMPLE }, (_, i) => entry(`act_gone${i}`));
    await redis.zadd(pendingKey(), ...ghosts.flatMap((m) => [Date.parse(live.created_at), m]));
    expect(await redis.zcard(pendingKey())).toBe(2 + 2 * HEAL_SAMPLE);

    const first = await store.actionStats();
    expect(first.unknown).toBe(1);
    // HEAL_SAMPLE of the 2 + 2 * HEAL_SAMPLE entries were checked: all stale, or all but the live one
    expect(first.pending).toBeGreaterThanOrEqual(2 + HEAL_SAMPLE);
    expect(first.pending).toBeLessThanOrEqual(3 + HEAL_SAMPLE);
    let calls = 1;
    while ((await store.actionStats()).pending > 1) {
      calls++;
      if (calls > 100) throw new Error('the stale entries were never dropped');
    }
    expect(await redis.zrange(pendingKey(), 0, -1)).toEqual([entry(live.id)]);
    expect(await redis.zrange(unknownKey(), 0, -1)).toEqual([entry(stuck.id)]);

    // an entry lost (its MULTI never ran): not counted until the action's next write
    await redis.zrem(pendingKey(), entry(live.id));
    expect(await store.actionStats()).toEqual({ pending: 0, unknown: 1 });
    await store.recordAttempt(scope, live.id);
    expect(await store.actionStats()).toEqual({ pending: 1, unknown: 1 });
  });
});
