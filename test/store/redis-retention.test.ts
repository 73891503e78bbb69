/**
 * Retention on the Redis store, seen in Redis itself: a swept task leaves no key and no index entry of its
 * own, of its actions or of its checkpoints (every key of the user and the tenant is read back); a swept
 * run keeps only the blobs its remaining checkpoints need, and a run that lost its latest checkpoint takes
 * the new latest's manifest; a user entry of the tenant's age index is re-scored, never removed, and a
 * writer lowers it again; sweepers running at once delete and count every record exactly once.
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.js';
import { openRedisStore } from '../../src/store/redis/index.js';
import { escapeKeyPart, TenantKeys, UserKeys } from '../../src/store/redis/keys.js';
import { SETTLE_MS } from '../../src/store/redis/retention.js';
import type { Scope, StateStore } from '../../src/store/types.js';
import { keysOf, REDIS_URL, randomPrefix, removePrefix } from './redis-env.js';

const DAY_MS = 24 * 3600 * 1000;
const redis = new Redis(REDIS_URL);
afterAll(() => redis.disconnect());
/** Each test has its own key prefix: a sweep is global. */
let prefix = '';

/** Every key under `base` with its whole content as text (members, fields and values, list items). */
async function dump(base: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const key of (await keysOf(redis, prefix)).filter((k) => k.startsWith(base))) {
    const type = await redis.type(key);
    let content: string[];
    if (type === 'hash') content = Object.entries(await redis.hgetall(key)).flat();
    else if (type === 'zset') content = await redis.zrange(key, 0, -1);
    else if (type === 'set') content = await redis.smembers(key);
    else if (type === 'list') content = await redis.lrange(key, 0, -1);
    else content = [String(await redis.get(key))];
    out.set(key, content.join('\n'));
  }
  return out;
}

function mentions(contents: Map<string, string>, needle: string): string[] {
  return [...contents].filter(([key, text]) => key.includes(needle) || text.includes(needle)).map(([k]) => k);
}

describe('redis retention', () => {
  let store: StateStore;
  let clock: ManualClock;
  let scope: Scope;
  let user: UserKeys;
  let tenant: TenantKeys;
  beforeEach(async () => {
    prefix = randomPrefix();
    clock = new ManualClock(Date.now() - 40 * DAY_MS);
    store = await openRedisStore(REDIS_URL, { clock, prefix });
    scope = { tenant_id: `t_${randomUUID()}`, user_id: `u_${randomUUID()}` };
    user = new UserKeys(prefix, scope.tenant_id, scope.user_id);
    tenant = new TenantKeys(prefix, scope.tenant_id);
  });
  afterEach(async () => {
    await store.close();
    await removePrefix(prefix);
  });

  it('a swept task leaves no key or index entry of itself, its actions or its checkpoints', async () => {
    const session = await store.createSession(scope, { ttl_seconds: 365 * 24 * 3600 });
    const old = await store.createTask(scope, { type: 'x', session_id: session.id });
    await store.updateTask(scope, old.id, 1, { state: 'COLLECTING' });
    const actions = [];
    for (const outcome of ['SUCCESS', 'PENDING', 'UNKNOWN'] as const) {
      const { action } = await store.beginAction(scope, {
        task_id: old.id,
        type: 'x',
        params: {},
        idempotency_key: `key-${outcome}`,
      });
      if (outcome === 'SUCCESS') await store.completeAction(scope, action.id, { status: 'SUCCESS' });
      if (outcome === 'UNKNOWN') await store.markActionUnknown(scope, action.id, 'timeout');
      actions.push(action);
    }
    const own = 'run:{own}';
    const ownCheckpoints = [];
    for (const step of [0, 1]) {
      const log = ['a', 'b', 'c'].slice(0, step + 2);
      ownCheckpoints.push(
        await store.putCheckpoint(scope, { run_id: own, task_id: old.id, step, channels: { log } }),
      );
    }
    // A run shared with checkpoints of no task: only the task's one goes, with the blobs only it needed.
    const shared = 'run-shared';
    const other = await store.putCheckpoint(scope, { run_id: shared, step: 0, channels: { x: 'kept' } });
    const mixed = await store.putCheckpoint(scope, {
      run_id: shared,
      task_id: old.id,
      step: 1,
      channels: { x: 'only-in-the-task', y: [1, 2] },
    });
    clock.advance(DAY_MS);
    const cutoff = new Date(clock.now()).toISOString();
    clock.advance(DAY_MS);
    const kept = await store.createTask(scope, { type: 'x', session_id: session.id });
    const keptAction = await store.beginAction(scope, {
      task_id: kept.id,
      type: 'x',
      params: {},
      idempotency_key: 'k',
    });
    const keptCheckpoint = await store.putCheckpoint(scope, {
      run_id: 'r2',
      task_id: kept.id,
      step: 0,
      channels: {},
    });

    expect(await store.sweepRetention({ tasks_before: cutoff }, 100)).toEqual({
      tasks: 1,
      actions: 3,
      checkpoints: 3,
    });

    const contents = new Map([...(await dump(user.base)), ...(await dump(tenant.base))]);
    const gone = [old.id, ...actions.map((a) => a.id), ...ownCheckpoints.map((c) => c.id), mixed.id];
    for (const id of gone) expect(mentions(contents, id), id).toEqual([]);
    expect(mentions(contents, escapeKeyPart(own)), 'run keys').toEqual([]);
    expect(mentions(contents, own), 'run entries').toEqual([]);
    for (const key of ['key-SUCCESS', 'key-PENDING', 'key-UNKNOWN'])
      expect(mentions(contents, key)).toEqual([]);
    for (const id of [kept.id, keptAction.action.id, keptCheckpoint.id, other.id, session.id]) {
      expect(mentions(contents, id).length, id).toBeGreaterThan(0);
    }
    expect(await redis.hlen(user.runBlobs(shared))).toBe(1);
    expect(await store.getCheckpoint(scope, other.id)).toEqual(other);
    expect((await store.listCheckpoints({ tenant_id: scope.tenant_id }, shared)).items).toEqual([other]);
    expect(await redis.zrange(user.ages('tasks'), 0, -1)).toEqual([kept.id]);
    expect(await redis.zrange(user.ages('checkpoints'), 0, -1)).toEqual([other.id, keptCheckpoint.id]);
    expect(await redis.zcard(user.ages('actions'))).toBe(0);
    // The user's own run can start again from nothing.
    const again = await store.putCheckpoint(scope, { run_id: own, step: 0, channels: { log: ['z'] } });
    expect(await store.latestCheckpoint({ tenant_id: scope.tenant_id }, own)).toEqual(again);
  });

  it('finished actions leave every index and free their key; a run that lost its latest checkpoint reads on', async () => {
    const t = await store.createTask(scope, { type: 'x' });
    const { action: done } = await store.beginAction(scope, {
      task_id: t.id,
      type: 'x',
      params: {},
      idempotency_key: 'done',
    });
    await store.completeAction(scope, done.id, { status: 'FAILED', error: { code: 'x', message: 'no' } });
    // The run's latest checkpoint (by sequence) is the oldest one: written on a clock set back.
    const first = await store.putCheckpoint(scope, { run_id: 'r', step: 0, channels: { log: ['a'], v: 1 } });
    clock.advance(-3 * DAY_MS);
    await store.putCheckpoint(scope, { run_id: 'r', step: 1, channels: { log: ['a', 'b'], v: 2 } });
    const sequenceBefore = Number(await redis.hget(user.runSequences(), 'r'));
    clock.advance(4 * DAY_MS);
    const cutoff = new Date(clock.now() - 2 * DAY_MS).toISOString();
    expect(
      await store.sweepRetention(
        { checkpoints_before: cutoff, actions_before: new Date(clock.now()).toISOString() },
        10,
      ),
    ).toEqual({
      tasks: 0,
      actions: 1,
      checkpoints: 1,
    });
    for (const key of [
      user.actions(),
      user.actionsByTask(t.id),
      user.actionsByStatus('FAILED'),
      tenant.actions(),
    ]) {
      expect(await redis.zcard(key), key).toBe(0);
    }
    expect(await redis.hlen(user.actionKeys())).toBe(0);
    expect(await redis.hexists(tenant.owners(), done.id)).toBe(0);
    expect(
      (await store.beginAction(scope, { task_id: t.id, type: 'x', params: {}, idempotency_key: 'done' }))
        .created,
    ).toBe(true);
    // The latest manifest is the remaining checkpoint's, its blobs all kept, and the sequence moved on.
    expect(await redis.hget(user.runLatest(), 'r')).toBe(await redis.hget(user.checkpoint(first.id), 'm'));
    expect(Number(await redis.hget(user.runSequences(), 'r'))).toBe(sequenceBefore + 1);
    expect(await redis.hlen(user.runBlobs('r'))).toBe(2);
    const next = await store.putCheckpoint(scope, {
      run_id: 'r',
      step: 2,
      channels: { log: ['a', 'c'], v: 1 },
    });
    expect((await store.listCheckpoints(scope, 'r')).items).toEqual([next, first]);
  });

  it('a swept user stays in the tenant index below now; a later write lowers it and is swept', async () => {
    const t = await store.createTask(scope, { type: 'x' });
    clock.advance(DAY_MS);
    expect(
      (await store.sweepRetention({ tasks_before: new Date(clock.now()).toISOString() }, 10)).tasks,
    ).toBe(1);
    expect(await store.getTask(scope, t.id)).toBeNull();
    expect(Number(await redis.zscore(tenant.agedUsers('tasks'), scope.user_id))).toBe(
      clock.now() - SETTLE_MS,
    );
    // A writer whose clock is far behind still gets its task found.
    clock.advance(-30 * DAY_MS);
    const late = await store.createTask(scope, { type: 'x' });
    expect(Number(await redis.zscore(tenant.agedUsers('tasks'), scope.user_id))).toBe(clock.now());
    clock.advance(31 * DAY_MS);
    const cutoff = new Date(clock.now() - 20 * DAY_MS).toISOString();
    expect((await store.sweepRetention({ tasks_before: cutoff }, 10)).tasks).toBe(1);
    expect(await store.getTask(scope, late.id)).toBeNull();
  });

  it('sweepers running at once delete and count every record exactly once', { timeout: 60_000 }, async () => {
    const own = randomPrefix();
    const writer = await openRedisStore(REDIS_URL, { clock, prefix: own });
    const sweepers = await Promise.all(
      [0, 1, 2, 3].map(() => openRedisStore(REDIS_URL, { clock, prefix: own })),
    );
    try {
      const tenants = [`t_${randomUUID()}`, `t_${randomUUID()}`];
      let n = 0;
      for (let u = 0; u < 20; u++) {
        const s = { tenant_id: tenants[u % 2] as string, user_id: `u_${u}` };
        for (let i = 0; i < 10; i++) {
          const task = await writer.createTask(s, { type: 'x' });
          const { action } = await writer.beginAction(s, {
            task_id: task.id,
            type: 'x',
            params: {},
            idempotency_key: `k${i}`,
          });
          await writer.completeAction(s, action.id, { status: 'SUCCESS' });
          await writer.putCheckpoint(s, {
            run_id: `run-${i % 3}`,
            step: i,
            task_id: task.id,
            channels: { i },
          });
          await writer.putCheckpoint(s, { run_id: `run-${i % 3}`, step: i, channels: { i } });
          n++;
        }
      }
      clock.advance(DAY_MS);
      const cutoff = new Date(clock.now()).toISOString();
      const totals = await Promise.all(
        sweepers.map(async (sweeper) => {
          const sum = { tasks: 0, actions: 0, checkpoints: 0 };
          for (;;) {
            const swept = await sweeper.sweepRetention(
              { tasks_before: cutoff, actions_before: cutoff, checkpoints_before: cutoff },
              7,
            );
            sum.tasks += swept.tasks;
            sum.actions += swept.actions;
            sum.checkpoints += swept.checkpoints;
            if (swept.tasks + swept.actions + swept.checkpoints === 0) return sum;
          }
        }),
      );
      const total = totals.reduce((a, b) => ({
        tasks: a.tasks + b.tasks,
        actions: a.actions + b.actions,
        checkpoints: a.checkpoints + b.checkpoints,
      }));
      expect(total).toEqual({ tasks: n, actions: n, checkpoints: 2 * n });
      // Left: the list of tenants and each tenant's user entries by age (re-scored, never removed).
      const left = (await keysOf(redis, own)).sort();
      const expected = [`${own}:tenants`];
      for (const t of tenants)
        for (const kind of ['tasks', 'actions', 'checkpoints'] as const)
          expected.push(new TenantKeys(own, t).agedUsers(kind));
      expect(left).toEqual(expected.sort());
    } finally {
      await Promise.all([writer, ...sweepers].map((s) => s.close()));
      await removePrefix(own);
    }
  });
});
