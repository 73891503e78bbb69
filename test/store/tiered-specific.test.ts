/**
 * What only the tiered store does: its URL forms, where each record lives (Redis: sessions, messages, hot
 * task copies; PostgreSQL: the rest), hot copies that are read but never stale, Redis lost entirely, and
 * errors under its own name.
 */
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { isAgentStateError } from '../../src/core/errors.js';
import { OPEN_TASK_STATES } from '../../src/core/model.js';
import { openStore } from '../../src/store/open.js';
import { openTieredStore, parseTieredUrl } from '../../src/store/tiered/index.js';
import type { Scope, StateStore } from '../../src/store/types.js';
import { adminQuery, schemaUrl } from './postgres-env.js';
import { keysOf, REDIS_URL, removePrefix } from './redis-env.js';
import { tieredEnv } from './tiered-env.js';

const env = tieredEnv();
const redis = new Redis(REDIS_URL);
afterAll(async () => {
  redis.disconnect();
  await env.cleanup();
});

let n = 0;
const freshScope = (): Scope => ({ tenant_id: `t_${env.schema}_${++n}`, user_id: 'u1' });

async function count(table: string, tenant: string): Promise<number> {
  const rows = await adminQuery(
    `SELECT count(*)::int AS n FROM "${env.schema}".${table} WHERE tenant_id = $1`,
    [tenant],
  );
  return rows.rows[0].n as number;
}

/** One of everything: a session with messages, a task, an action, a checkpoint, memory, a lease, a request key. */
async function populate(store: StateStore, scope: Scope) {
  const session = await store.createSession(scope, { ttl_seconds: 600 });
  await store.appendMessages(scope, session.id, [{ role: 'user', content: 'hi' }]);
  const task = await store.createTask(scope, { type: 'flight', session_id: session.id });
  const { action } = await store.beginAction(scope, {
    task_id: task.id,
    type: 'tool_call',
    params: null,
    idempotency_key: `k-${task.id}`,
  });
  const checkpoint = await store.putCheckpoint(scope, {
    run_id: `run-${task.id}`,
    step: 0,
    channels: { a: 1 },
  });
  await store.putMemory(scope, { namespace: 'prefs', key: 'seat', value: 'aisle' });
  expect(await store.acquireLease(scope, `lease-${task.id}`, 'runner-1', 60_000)).not.toBeNull();
  expect(await store.claimRequestKey(scope, `req-${task.id}`, 'h', 600)).toEqual({ state: 'new' });
  return { session, task, action, checkpoint };
}

describe('tiered store', () => {
  it('reads both URL forms; the inner URL may be URL-encoded or, without &, plain', () => {
    const pg = 'postgres://u@h:5432/db?schema=s1';
    expect(parseTieredUrl(`redis://r:6379/2?prefix=p&durable=${encodeURIComponent(pg)}`)).toEqual({
      redis: 'redis://r:6379/2?prefix=p',
      postgres: pg,
    });
    expect(parseTieredUrl(`rediss://r:6380?durable=${pg}`)).toEqual({
      redis: 'rediss://r:6380',
      postgres: pg,
    });
    const tiered = `tiered:?redis=${encodeURIComponent('redis://r:6379/1')}&postgres=${encodeURIComponent(pg)}&prefix=p`;
    expect(parseTieredUrl(tiered)).toEqual({ redis: 'redis://r:6379/1?prefix=p', postgres: pg });
    const bad = [
      'redis://r:6379',
      'redis://r:6379?durable=mysql://x',
      'tiered:?postgres=postgres://h/db',
      'memory:',
      'not a url',
    ];
    for (const url of bad) {
      expect(() => parseTieredUrl(url), url).toThrow(/^\[tiered\] /);
      try {
        parseTieredUrl(url);
      } catch (error) {
        expect(isAgentStateError(error, 'invalid_request')).toBe(true);
      }
    }
  });

  it('openStore opens it for redis://...?durable=...', async () => {
    const store = await openStore(env.url);
    expect(store.adapter).toBe('tiered');
    expect(store.capabilities).toEqual({ multiProcess: true, durable: true });
    expect(await store.ping()).toBe(true);
    await store.close();
  });

  it('keeps sessions and messages in Redis only, and everything durable in PostgreSQL only', async () => {
    const store = await openTieredStore(env.url);
    const scope = freshScope();
    const x = await populate(store, scope);
    expect(await count('sessions', scope.tenant_id)).toBe(0);
    expect(await count('messages', scope.tenant_id)).toBe(0);
    for (const table of [
      'tasks',
      'task_events',
      'actions',
      'checkpoints',
      'memory',
      'leases',
      'request_keys',
    ]) {
      expect(await count(table, scope.tenant_id), table).toBe(1);
    }
    const keys = (await keysOf(redis, env.prefix)).filter((k) => k.includes(scope.tenant_id));
    const kinds = new Set(keys.map((k) => k.slice(k.indexOf('}:') + 2).replace(/:.*$/, '')));
    expect(kinds.has('s') && kinds.has('m') && kinds.has('ht')).toBe(true);
    for (const durable of ['t', 'te', 'a', 'ak', 'c', 'mv', 'l', 'rq'])
      expect(kinds.has(durable), durable).toBe(false);
    // Native TTLs on the Redis side.
    for (const key of keys.filter((k) => /}:(s|m|ht):/.test(k)))
      expect(await redis.pttl(key), key).toBeGreaterThan(0);
    expect(keys.some((k) => k.endsWith(`ht:${x.task.id}`))).toBe(true);
    await store.close();
  });

  it('task reads come from the hot copy when there is one, and writes replace it; closed tasks are not kept hot', async () => {
    const store = await openTieredStore(env.url);
    const scope = freshScope();
    const task = await store.createTask(scope, { type: 'flight', status_line: 'new' });
    const key = (await keysOf(redis, env.prefix)).find((k) => k.endsWith(`ht:${task.id}`));
    expect(key).toBeDefined();
    expect(JSON.parse((await redis.hget(key!, 'd')) ?? 'null')).toEqual(task);
    // A marked copy shows that a user-scoped read is served from Redis; a tenant-wide read is PostgreSQL's.
    await redis.hset(key!, 'd', JSON.stringify({ ...task, status_line: 'from redis' }));
    expect((await store.getTask(scope, task.id))?.status_line).toBe('from redis');
    expect(await store.getTask({ tenant_id: scope.tenant_id }, task.id)).toEqual(task);
    // A write goes to PostgreSQL (checking the version there) and through to the copy.
    const updated = await store.updateTask(scope, task.id, 1, { state: 'COLLECTING' });
    expect(await store.getTask(scope, task.id)).toEqual(updated);
    expect(await redis.hget(key!, 'v')).toBe('2');
    const closed = await store.updateTask(scope, task.id, 2, { state: 'CANCELLED' });
    expect(await redis.hget(key!, 'd')).toBeNull();
    expect(await store.getTask(scope, task.id)).toEqual(closed);
    await store.close();
  });

  it('a hot copy is never stale for another store: writes of one are seen by the reads of the other', async () => {
    const a = await openTieredStore(env.url);
    const b = await openTieredStore(env.url);
    const scope = freshScope();
    let task = await a.createTask(scope, { type: 'counter', data: { counter: 0 } });
    for (let i = 1; i <= 5; i++) {
      const [writer, reader] = i % 2 === 0 ? [a, b] : [b, a];
      expect(await reader.getTask(scope, task.id)).toEqual(task);
      task = await writer.updateTask(scope, task.id, task.version, { data: { counter: i } });
      expect(await reader.getTask(scope, task.id)).toEqual(task);
    }
    // A stale version fails against PostgreSQL and leaves the reads right.
    await expect(a.updateTask(scope, task.id, 1, { data: {} })).rejects.toSatisfy((e) =>
      isAgentStateError(e, 'version_conflict'),
    );
    expect(await b.getTask(scope, task.id)).toEqual(task);
    await a.close();
    await b.close();
  });

  it('Redis lost entirely (its prefix flushed): sessions are gone, every durable record stays, a new session continues the open task', async () => {
    const store = await openTieredStore(env.url);
    const scope = freshScope();
    const x = await populate(store, scope);
    const task = await store.updateTask(scope, x.task.id, 1, { state: 'COLLECTING', slots: { to: 'LIS' } });
    await removePrefix(env.prefix);

    expect(await store.getSession(scope, x.session.id)).toBeNull();
    expect(await store.listMessages(scope, x.session.id)).toEqual([]);
    expect(await store.getTask(scope, task.id)).toEqual(task);
    expect((await store.listTaskEvents(scope, task.id)).map((e) => e.to_state)).toEqual([
      'INIT',
      'COLLECTING',
    ]);
    expect(await store.getAction(scope, x.action.id)).toEqual(x.action);
    expect(await store.getCheckpoint(scope, x.checkpoint.id)).toEqual(x.checkpoint);
    expect((await store.getMemory(scope, 'prefs', 'seat'))?.value).toBe('aisle');
    expect(await store.acquireLease(scope, `lease-${task.id}`, 'runner-2', 60_000)).toBeNull();
    expect((await store.claimRequestKey(scope, `req-${task.id}`, 'h', 600)).state).toBe('in_progress');

    const fresh = await store.createSession(scope, {});
    const [open] = (await store.listTasks(scope, { state: OPEN_TASK_STATES })).items;
    expect(open).toEqual(task);
    const turn = await store.commitTurn(scope, {
      update_tasks: [{ id: task.id, expected_version: task.version, patch: { session_id: fresh.id } }],
      messages: { session_id: fresh.id, items: [{ role: 'assistant', content: 'Where were we?' }] },
    });
    expect(turn.tasks[0]?.session_id).toBe(fresh.id);
    expect(turn.messages.map((m) => m.seq)).toEqual([1]);
    await store.close();
  });

  it('failures carry its name and the tier that failed; opening fails cleanly when a tier is down', async () => {
    const store = await openTieredStore(env.url);
    await expect(store.getSession({ tenant_id: 't' }, 'nope')).rejects.toThrow(/^\[tiered\] /);
    await store.close();
    await expect(store.getTask({ tenant_id: 't' }, 'nope')).rejects.toThrow(
      /^\[tiered\] the store is closed/,
    );
    const deadPg = encodeURIComponent(schemaUrl(env.schema).replace(':5432', ':1'));
    const pgDown = await openTieredStore(`${REDIS_URL}/?prefix=${env.prefix}&durable=${deadPg}`).catch(
      (e) => e,
    );
    expect(isAgentStateError(pgDown, 'store_unavailable')).toBe(true);
    expect(String(pgDown.message)).toMatch(/^\[tiered\] postgres: /);
    const redisDown = await openTieredStore(env.urlWith('redis://127.0.0.1:1')).catch((e) => e);
    expect(isAgentStateError(redisDown, 'store_unavailable')).toBe(true);
    expect(String(redisDown.message)).toMatch(/^\[tiered\] /);
  });
});
