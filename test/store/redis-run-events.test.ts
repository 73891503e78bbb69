/**
 * What only the Redis store's run events have (src/store/redis/run-events.ts): a list per run and a hash of
 * its newest expiry under the user's hash tag (one cluster slot with the user's other keys, written by the
 * same script as the rest of a turn's commit), a native TTL that is only a backstop (the TTL's length, not
 * an instant of the store's clock), and the tenant's expiry hints that the sweeper follows by the store's
 * clock.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.js';
import type { RunEvent } from '../../src/core/model.js';
import { createClient } from '../../src/store/redis/client.js';
import { openRedisStore } from '../../src/store/redis/index.js';
import { escapeKeyPart, TenantKeys, UserKeys } from '../../src/store/redis/keys.js';
import type { Scope, StateStore } from '../../src/store/types.js';
import { REDIS_URL, randomPrefix, removePrefix } from './redis-env.js';

const prefix = randomPrefix();
const redis = new Redis(REDIS_URL);
afterAll(async () => {
  await removePrefix(prefix);
  redis.disconnect();
});

/** CRC16/XMODEM, as Redis Cluster uses it. */
function crc16(data: Buffer): number {
  let crc = 0;
  for (const byte of data) {
    crc ^= byte << 8;
    for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc;
}

function keySlot(key: string): number {
  const open = key.indexOf('{');
  if (open !== -1) {
    const close = key.indexOf('}', open + 1);
    if (close > open + 1) return crc16(Buffer.from(key.slice(open + 1, close))) % 16384;
  }
  return crc16(Buffer.from(key)) % 16384;
}

/** `redis-cli monitor`: the keys of every EVALSHA/EVAL naming a key of this file's prefix. */
async function startMonitor(): Promise<{ stop(): void; calls(): string[][] }> {
  const url = new URL(REDIS_URL);
  const cli = spawn('redis-cli', ['-h', url.hostname, '-p', url.port || '6379', 'monitor']);
  let buffered = '';
  const calls: string[][] = [];
  cli.stdout.setEncoding('utf8');
  await new Promise<void>((resolve, reject) => {
    cli.on('error', reject);
    cli.stdout.on('data', (chunk: string) => {
      buffered += chunk;
      if (buffered.startsWith('OK')) resolve();
      const lines = buffered.split('\n');
      buffered = lines.pop() ?? '';
      for (const line of lines) {
        const args = [...line.matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((m) => m[1] as string);
        const command = String(args[0]).toLowerCase();
        if (command !== 'evalsha' && command !== 'eval') continue;
        const keys = args.slice(3, 3 + Number(args[2]));
        if (keys.some((key) => key.startsWith(`${prefix}:`))) calls.push(keys);
      }
    });
  });
  return { stop: () => cli.kill(), calls: () => calls };
}

const types = (events: readonly RunEvent[]) => events.map((event) => event.type);

describe('redis run events', () => {
  let store: StateStore;
  let clock: ManualClock;
  let scope: Scope;
  let user: UserKeys;
  let tenant: TenantKeys;
  beforeEach(async () => {
    // An hour behind real time, as the conformance suite's clock: nothing may expire early because of it.
    clock = new ManualClock(Date.now() - 3_600_000);
    store = await openRedisStore(REDIS_URL, { clock, prefix, runEventTtlSeconds: 120 });
    scope = { tenant_id: `t{${randomUUID()}}:%`, user_id: `u:{${randomUUID()}}` };
    user = new UserKeys(prefix, scope.tenant_id, scope.user_id);
    tenant = new TenantKeys(prefix, scope.tenant_id);
  });
  afterEach(() => store.close());

  const append = (session_id: string, run_id: string, ...kinds: RunEvent['type'][]) =>
    store.appendRunEvents(scope, { session_id, run_id, events: kinds.map((type) => ({ type })) });

  it('a list per run (seq = position) and its newest expiry, in the user slot; a hint in the tenant’s', async () => {
    const session = await store.createSession(scope, { ttl_seconds: 600 });
    const run = 'run:{1}%';
    await append(session.id, run, 'run.started');
    clock.advance(1_000);
    await append(session.id, run, 'message.delta', 'message.delta');
    const list = user.runEvents(session.id, run);
    const expiry = user.runEventsExpiry(session.id, run);
    expect(list).toBe(`${user.base}ev:${session.id}:${escapeKeyPart(run)}`);
    const stored = (await redis.lrange(list, 0, -1)).map((row) => JSON.parse(row) as Record<string, unknown>);
    expect(stored.map((row) => row.type)).toEqual(['run.started', 'message.delta', 'message.delta']);
    // The owner ids are the key's, the seq the position's.
    expect(Object.keys(stored[0] ?? {}).sort()).toEqual(['created_at', 'data', 'expires_at', 'type']);
    const newest = clock.now() + 120_000;
    expect(Number(await redis.hget(expiry, 'x'))).toBe(newest);
    expect(
      await redis.zscore(
        tenant.runEventHints(),
        `${escapeKeyPart(scope.user_id)}:${session.id}:${escapeKeyPart(run)}`,
      ),
    ).toBe(String(newest));
    expect((await store.listRunEvents(scope, session.id, run)).map((e) => e.id)).toEqual(['1', '2', '3']);
    const slot = keySlot(user.session(session.id));
    expect(keySlot(list)).toBe(slot);
    expect(keySlot(expiry)).toBe(slot);
    expect(keySlot(tenant.runEventHints())).toBe(keySlot(tenant.owners()));
  });

  it('a native TTL of the TTL’s length plus a grace, renewed by every append, whatever the store’s clock', async () => {
    const session = await store.createSession(scope, { ttl_seconds: 600 });
    await append(session.id, 'r', 'run.started');
    for (const key of [user.runEvents(session.id, 'r'), user.runEventsExpiry(session.id, 'r')]) {
      const ttl = await redis.pttl(key);
      expect(ttl, key).toBeGreaterThan(125_000);
      expect(ttl, key).toBeLessThanOrEqual(130_000);
      await redis.pexpire(key, 5_000);
    }
    await append(session.id, 'r', 'run.completed');
    for (const key of [user.runEvents(session.id, 'r'), user.runEventsExpiry(session.id, 'r')]) {
      expect(await redis.pttl(key), key).toBeGreaterThan(125_000);
    }
  });

  it('a turn’s events are pushed by the script that writes the rest of the turn', async () => {
    const session = await store.createSession(scope, { ttl_seconds: 600 });
    const task = await store.createTask(scope, { type: 'flight', session_id: session.id });
    const monitor = await startMonitor();
    try {
      await store.commitTurn(scope, {
        update_tasks: [{ id: task.id, expected_version: 1, patch: { state: 'COLLECTING' } }],
        messages: { session_id: session.id, items: [{ role: 'assistant', content: 'When?' }] },
        events: { session_id: session.id, run_id: 'r', final: () => ({ type: 'run.completed' }) },
      });
    } finally {
      for (
        let i = 0;
        i < 50 && !monitor.calls().some((keys) => keys.includes(user.runEvents(session.id, 'r')));
        i++
      )
        await new Promise((r) => setTimeout(r, 100));
      monitor.stop();
    }
    const script = monitor.calls().find((keys) => keys.includes(user.runEvents(session.id, 'r')));
    expect(script).toBeDefined();
    expect(script).toEqual(
      expect.arrayContaining([user.task(task.id), user.messages(session.id), user.session(session.id)]),
    );
    expect(new Set(script?.map(keySlot)).size).toBe(1);
    expect(types(await store.listRunEvents(scope, session.id, 'r'))).toEqual([
      'task.updated',
      'message.created',
      'run.completed',
    ]);
  });

  it('the sweeper goes by the store’s clock: a run goes once its newest event expired, a hint follows it', async () => {
    const session = await store.createSession(scope, { ttl_seconds: 100_000 });
    await append(session.id, 'done', 'run.started');
    await append(session.id, 'live', 'run.started');
    const hint = (run: string) =>
      redis.zscore(tenant.runEventHints(), `${escapeKeyPart(scope.user_id)}:${session.id}:${run}`);
    clock.advance(60_000);
    await append(session.id, 'live', 'run.completed');
    clock.advance(60_000);
    await store.sweepExpired(100);
    expect(
      await redis.exists(user.runEvents(session.id, 'done'), user.runEventsExpiry(session.id, 'done')),
    ).toBe(0);
    expect(await hint('done')).toBeNull();
    expect(types(await store.listRunEvents(scope, session.id, 'live'))).toEqual([
      'run.started',
      'run.completed',
    ]);
    expect(await hint('live')).toBe(String(clock.now() + 60_000));
    // A run Redis already dropped leaves only its hint, which the sweeper removes when due.
    await redis.del(user.runEvents(session.id, 'live'), user.runEventsExpiry(session.id, 'live'));
    clock.advance(60_000);
    await store.sweepExpired(100);
    expect(await redis.zcard(tenant.runEventHints())).toBe(0);
    // After a sweep the run starts over at seq 1.
    await append(session.id, 'done', 'run.started');
    expect((await store.listRunEvents(scope, session.id, 'done')).map((e) => e.id)).toEqual(['1']);
  });

  it('the sweeper removes a hint only while it is still due (an append racing it moved it)', async () => {
    const { redis: client, scripts } = createClient(REDIS_URL);
    await client.connect();
    try {
      const key = `${prefix}:{due}:evh`;
      await client.zadd(key, 100, 'due', 300, 'moved');
      expect(await scripts.removeDue(1, key, 200, 'due', 'moved', 'absent')).toBe(1);
      expect(await client.zrange(key, 0, -1)).toEqual(['moved']);
    } finally {
      client.disconnect();
    }
  });
});
