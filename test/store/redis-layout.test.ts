/**
 * What only the Redis store has: native TTLs on sessions and messages (and never on tasks, actions,
 * checkpoints), the sweeper removing keys and index entries, index entries of vanished records skipped and
 * removed, escaping of ids in keys, and the URL options.
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.js';
import { isAgentStateError } from '../../src/core/errors.js';
import { openStore } from '../../src/store/open.js';
import { openRedisStore } from '../../src/store/redis/index.js';
import { TenantKeys, UserKeys } from '../../src/store/redis/keys.js';
import type { Scope, StateStore } from '../../src/store/types.js';
import { keysOf, REDIS_URL, randomPrefix, removePrefix, urlWithPrefix } from './redis-env.js';

const prefix = randomPrefix();
const redis = new Redis(REDIS_URL);
afterAll(async () => {
  await removePrefix(prefix);
  redis.disconnect();
});

describe('redis key layout', () => {
  let store: StateStore;
  let clock: ManualClock;
  let scope: Scope;
  let user: UserKeys;
  let tenant: TenantKeys;
  beforeEach(async () => {
    clock = new ManualClock(Date.now());
    store = await openRedisStore(REDIS_URL, { clock, prefix });
    scope = { tenant_id: `t_${randomUUID()}`, user_id: `u_${randomUUID()}` };
    user = new UserKeys(prefix, scope.tenant_id, scope.user_id);
    tenant = new TenantKeys(prefix, scope.tenant_id);
  });
  afterEach(() => store.close());

  async function fixture() {
    const session = await store.createSession(scope, { ttl_seconds: 60 });
    await store.appendMessages(
      scope,
      session.id,
      [1, 2, 3].map((n) => ({ role: 'user' as const, content: `${n}` })),
    );
    const task = await store.createTask(scope, { type: 'x', session_id: session.id });
    const { action } = await store.beginAction(scope, {
      task_id: task.id,
      type: 'x',
      params: {},
      idempotency_key: 'k',
    });
    const checkpoint = await store.putCheckpoint(scope, { run_id: 'r1', step: 0, channels: { a: [1] } });
    return { session, task, action, checkpoint };
  }

  it('sessions and messages carry a native TTL; tasks, actions and checkpoints none', async () => {
    const { session, task, action, checkpoint } = await fixture();
    for (const key of [user.session(session.id), user.messages(session.id), user.sessions()]) {
      const ttl = await redis.pttl(key);
      expect(ttl, key).toBeGreaterThan(55_000);
      expect(ttl, key).toBeLessThanOrEqual(70_000);
    }
    for (const key of [user.task(task.id), user.taskEvents(task.id), user.action(action.id)]) {
      expect(await redis.pttl(key), key).toBe(-1);
    }
    expect(await redis.pttl(user.checkpoint(checkpoint.id))).toBe(-1);
    expect(await redis.pttl(user.runBlobs('r1'))).toBe(-1);
    clock.advance(50_000);
    await store.touchSession(scope, session.id);
    expect(await redis.pttl(user.messages(session.id))).toBeGreaterThan(55_000);
    // The user's session index lives as long as their longest-lived session, and no shorter.
    await store.createSession(scope, { ttl_seconds: 600 });
    expect(await redis.pttl(user.sessions())).toBeGreaterThan(590_000);
    await store.touchSession(scope, session.id);
    expect(await redis.pttl(user.sessions())).toBeGreaterThan(590_000);
  });

  it('the sweeper removes an expired session, its messages and index entries; the rest stays', async () => {
    const { session, task, action, checkpoint } = await fixture();
    const live = await store.createSession(scope, { ttl_seconds: 600 });
    clock.advance(61_000);
    expect(await store.sweepExpired(100)).toBe(1);
    expect(await redis.exists(user.session(session.id), user.messages(session.id))).toBe(0);
    expect(await redis.zrange(user.sessions(), 0, -1)).toEqual([expect.stringContaining(live.id)]);
    expect(await redis.zrange(tenant.sessions(), 0, -1)).toEqual([expect.stringContaining(live.id)]);
    expect(await redis.zrange(tenant.sessionExpiry(), 0, -1)).toEqual([expect.stringContaining(live.id)]);
    expect(await redis.hget(tenant.owners(), session.id)).toBeNull();
    expect(await store.getTask(scope, task.id)).not.toBeNull();
    expect(await store.getAction(scope, action.id)).not.toBeNull();
    expect(await store.getCheckpoint(scope, checkpoint.id)).toEqual(checkpoint);
    expect(await store.sweepExpired(100)).toBe(0);
  });

  it('a session Redis already reclaimed is skipped by lists, its entries removed by lists and the sweeper', async () => {
    const { session } = await fixture();
    await redis.del(user.session(session.id), user.messages(session.id));
    expect((await store.listSessions(scope)).items).toEqual([]);
    expect(await redis.zcard(user.sessions())).toBe(0);
    expect((await store.listSessions({ tenant_id: scope.tenant_id })).items).toEqual([]);
    clock.advance(61_000);
    expect(await store.sweepExpired(100)).toBe(1);
    expect(await redis.zcard(tenant.sessions())).toBe(0);
    expect(await redis.zcard(tenant.sessionExpiry())).toBe(0);
  });

  it('listing removes an expired session at once; the next sweep still counts it', async () => {
    const { session, task } = await fixture();
    clock.advance(61_000);
    expect((await store.listSessions(scope)).items).toEqual([]);
    expect(await redis.exists(user.session(session.id), user.messages(session.id))).toBe(0);
    expect(await redis.zcard(user.sessions())).toBe(0);
    expect(await store.sweepExpired(100)).toBe(1);
    expect(await redis.zcard(tenant.sessionExpiry())).toBe(0);
    expect(await store.getTask(scope, task.id)).not.toBeNull();
  });

  it('escapes ids: tenant "a:b" with user "c" is not tenant "a" with user "b:c"', async () => {
    const base = `t_${randomUUID()}`;
    const one = { tenant_id: `${base}:b`, user_id: 'c' };
    const two = { tenant_id: base, user_id: 'b:c' };
    const mine = await store.createSession(one, {});
    await store.putMemory(one, { namespace: 'n', key: 'k', value: 1 });
    expect(await store.getSession(two, mine.id)).toBeNull();
    expect((await store.listSessions(two)).items).toEqual([]);
    expect(await store.getMemory(two, 'n', 'k')).toBeNull();
    expect(await store.getSession(one, mine.id)).toEqual(mine);
  });

  it('memory with a TTL carries a native TTL, which an overwrite without one removes', async () => {
    await store.putMemory(scope, { namespace: 'n', key: 'k', value: 1, ttl_seconds: 60 });
    expect(await redis.pttl(user.memory('n', 'k'))).toBeGreaterThan(55_000);
    await store.putMemory(scope, { namespace: 'n', key: 'k', value: 2 });
    expect(await redis.pttl(user.memory('n', 'k'))).toBe(-1);
  });

  it('keeps every key under its prefix', async () => {
    await fixture();
    const keys = await keysOf(redis, prefix);
    expect(keys.length).toBeGreaterThan(10);
    for (const key of keys) expect(key.startsWith(`${prefix}:`)).toBe(true);
  });
});

describe('redis expiry on the system clock', () => {
  it('Redis reclaims idle sessions by itself; the sweeper then leaves only the list of tenants', async () => {
    const own = randomPrefix();
    const store = await openRedisStore(REDIS_URL, { prefix: own });
    try {
      const tenant_id = `t_${randomUUID()}`;
      for (let i = 0; i < 20; i++) {
        const scope = { tenant_id, user_id: `u_${i}` };
        const session = await store.createSession(scope, { ttl_seconds: 2 });
        await store.appendMessages(scope, session.id, [{ role: 'user', content: `${i}` }]);
      }
      // 3 keys per session; tenants, own, ss, sx; the live-session count of status active
      expect((await keysOf(redis, own)).length).toBe(20 * 3 + 5);
      // TTL 2 s plus a grace of as much again (4 s: no key is gone before the 20 are counted, even on a loaded
      // machine); SCAN does not return keys past their TTL.
      await new Promise((resolve) => setTimeout(resolve, 4_300));
      const left = await keysOf(redis, own);
      expect(left.sort()).toEqual(
        [`${own}:tenants`, ...['own', 'ss', 'sx'].map((k) => new TenantKeys(own, tenant_id).base + k)].sort(),
      );
      expect(await store.sweepExpired(1000)).toBe(20);
      expect(await keysOf(redis, own)).toEqual([`${own}:tenants`]);
    } finally {
      await store.close();
      await removePrefix(own);
    }
  });
});

describe('redis URL', () => {
  it('opens through openStore with ?prefix=; refuses a bad prefix and ?durable= (tiered)', async () => {
    const own = randomPrefix();
    const store = await openStore(urlWithPrefix(own));
    try {
      expect(store.adapter).toBe('redis');
      await store.createSession({ tenant_id: 't', user_id: 'u' }, {});
      expect((await keysOf(redis, own)).length).toBeGreaterThan(0);
    } finally {
      await store.close();
      await removePrefix(own);
    }
    const durable = `${REDIS_URL}?durable=${encodeURIComponent('postgres://127.0.0.1/x')}`;
    await expect(openRedisStore(durable)).rejects.toSatisfy((e) => isAgentStateError(e, 'invalid_request'));
    await expect(openStore(`${REDIS_URL}?prefix=a{b}`)).rejects.toSatisfy((e) =>
      isAgentStateError(e, 'invalid_request'),
    );
  });

  it("keeps its keys in the URL's database, and refuses one the server does not have instead of using 0", async () => {
    const own = randomPrefix();
    const inDb = (db: string) => {
      const url = new URL(urlWithPrefix(own));
      url.pathname = db;
      return url.toString();
    };
    const store = await openStore(inDb('/3'));
    const db3 = new Redis(REDIS_URL, { db: 3 });
    try {
      await store.createSession({ tenant_id: 't', user_id: 'u' }, {});
      expect((await keysOf(db3, own)).length).toBeGreaterThan(0);
      expect(await keysOf(redis, own)).toEqual([]);
    } finally {
      await store.close();
      for (const key of await keysOf(db3, own)) await db3.unlink(key);
      db3.disconnect();
    }
    // This server has 16 databases (0-15), Redis's default.
    await expect(openStore(inDb('/99'))).rejects.toThrow(
      'the URL names Redis database 99, which the server does not have',
    );
    await expect(openStore(inDb('/x'))).rejects.toThrow("the URL's path must be a database number");
    expect(await keysOf(redis, own)).toEqual([]);
  });
});
