/**
 * Redis Cluster readiness: every script the store runs touches keys of one hash slot. A MONITOR connection
 * records every EVALSHA/EVAL of this file's key prefix while a workload uses every part of the store, with
 * tenant and user ids full of `{`, `}` and `:`; the test computes each key's CRC16 slot itself.
 */
import { spawn } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.js';
import { openRedisStore } from '../../src/store/redis/index.js';
import { escapeKeyPart } from '../../src/store/redis/keys.js';
import { REDIS_URL, randomPrefix, removePrefix } from './redis-env.js';

const prefix = randomPrefix();
afterAll(() => removePrefix(prefix));

/** CRC16/XMODEM, as Redis Cluster uses it. */
function crc16(data: Buffer): number {
  let crc = 0;
  for (const byte of data) {
    crc ^= byte << 8;
    for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc;
}

/** The cluster slot of a key: of its hash tag (first `{...}` with something inside) when it has one. */
function keySlot(key: string): number {
  const open = key.indexOf('{');
  if (open !== -1) {
    const close = key.indexOf('}', open + 1);
    if (close > open + 1) return crc16(Buffer.from(key.slice(open + 1, close))) % 16384;
  }
  return crc16(Buffer.from(key)) % 16384;
}

interface ScriptCall {
  readonly script: string;
  readonly keys: string[];
}

/** `redis-cli monitor` in a child process, collecting the EVALSHA/EVAL calls that name keys of `prefix`. */
async function startMonitor(): Promise<{ stop(): void; calls(): ScriptCall[] }> {
  const url = new URL(REDIS_URL);
  const cli = spawn('redis-cli', ['-h', url.hostname, '-p', url.port || '6379', 'monitor']);
  let buffered = '';
  const calls: ScriptCall[] = [];
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
        if (!keys.some((key) => key.startsWith(`${prefix}:`))) continue;
        calls.push({
          script: command === 'eval' ? `eval ${String(args[1]).slice(0, 60)}` : String(args[1]),
          keys,
        });
      }
    });
  });
  return { stop: () => cli.kill(), calls: () => calls };
}

describe('redis key slots', () => {
  it('computes slots as Redis Cluster does', () => {
    expect(crc16(Buffer.from('123456789'))).toBe(0x31c3);
    expect(keySlot('foo')).toBe(12182);
    expect(keySlot('{user1000}.following')).toBe(keySlot('{user1000}.followers'));
    expect(keySlot('foo{}{bar}')).toBe(keySlot('foo{}{bar}'));
    expect(keySlot('foo{{bar}}zap')).toBe(crc16(Buffer.from('{bar')) % 16384);
  });

  it('every script of every operation touches one slot, also with braces and colons in ids', async () => {
    const monitor = await startMonitor();
    const clock = new ManualClock(Date.now());
    const store = await openRedisStore(REDIS_URL, { clock, prefix });
    const scope = { tenant_id: 't{1}:x%', user_id: 'u}:{2' };
    const tenant = { tenant_id: scope.tenant_id };
    try {
      const session = await store.createSession(scope, { ttl_seconds: 60 });
      await store.appendMessages(scope, session.id, [{ role: 'user', content: 'hi' }]);
      const updated = await store.updateSession(tenant, session.id, 1, { context: { a: 1 } });
      await store.touchSession(scope, session.id);
      const task = await store.createTask(scope, { type: 'flight', session_id: session.id });
      await store.updateTask(scope, task.id, 1, { state: 'COLLECTING' });
      const { action } = await store.beginAction(scope, {
        task_id: task.id,
        type: 'x',
        params: {},
        idempotency_key: 'k',
      });
      await store.beginAction(scope, { task_id: task.id, type: 'x', params: {}, idempotency_key: 'k' });
      await store.recordAttempt(scope, action.id);
      await store.markActionUnknown(tenant, action.id, 'timeout');
      await store.resolveAction(scope, action.id, { status: 'SUCCESS', note: 'ops' });
      for (let step = 0; step < 4; step++) {
        await store.putCheckpoint(scope, {
          run_id: 'run:{a}',
          step,
          channels: { list: [...Array(step + 1).keys()] },
        });
      }
      await store.listCheckpoints(tenant, 'run:{a}', { limit: 3 });
      await store.pruneCheckpoints(scope, 'run:{a}', 2);
      await store.putMemory(scope, { namespace: 'n:{s}', key: 'k}', value: 1, ttl_seconds: 60 });
      await store.deleteMemory(scope, 'n:{s}', 'k}');
      await store.acquireLease(scope, 'lease:{1}', 'me', 1000);
      await store.releaseLease(scope, 'lease:{1}', 'me');
      await store.claimRequestKey(scope, 'req{1}', 'h', 60);
      await store.completeRequestKey(scope, 'req{1}', { status: 200, body: {} });
      await store.commitTurn(scope, {
        session: { id: session.id, expected_version: updated.version, patch: { status: 'waiting_for_user' } },
        create_tasks: [{ type: 'other', session_id: session.id }],
        update_tasks: [{ id: task.id, expected_version: 2, patch: { state: 'CONFIRMING' } }],
        begin_actions: [{ task_id: task.id, type: 'y', params: {}, idempotency_key: 'k2' }],
        messages: { session_id: session.id, items: [{ role: 'assistant', content: 'ok' }] },
        checkpoint: { run_id: 'run:{a}', step: 9, channels: { list: [1] } },
      });
      clock.advance(3_600_000);
      expect(await store.sweepExpired(10)).toBe(1);
      const everything = new Date(clock.now()).toISOString();
      const cutoffs = {
        tasks_before: everything,
        actions_before: everything,
        checkpoints_before: everything,
      };
      expect((await store.sweepRetention(cutoffs, 100)).tasks).toBe(2);
    } finally {
      await store.close();
      // MONITOR output may trail behind on a busy server: wait for the last script (the sweep) to show.
      for (let i = 0; i < 50 && monitor.calls().length < 27; i++)
        await new Promise((r) => setTimeout(r, 100));
      await new Promise((resolve) => setTimeout(resolve, 200));
      monitor.stop();
    }
    const calls = monitor.calls();
    const userTag = `{${escapeKeyPart(scope.tenant_id)}:${escapeKeyPart(scope.user_id)}}`;
    const tenantTag = `{${escapeKeyPart(scope.tenant_id)}}`;
    // 25 writes and reads above run a script (the repeated beginAction only reads), then retention runs
    // its own in the user's slot and releases owner entries in the tenant's; all five scripts ran (each
    // counted once or twice: ioredis sends EVALSHA, or EVAL when the server does not know it yet).
    expect(calls.length).toBeGreaterThanOrEqual(27);
    expect(new Set(calls.map((c) => c.script)).size).toBeGreaterThanOrEqual(5);
    for (const call of calls) {
      expect(new Set(call.keys.map(keySlot)).size, call.keys.join(' ')).toBe(1);
      const tag = call.keys.every((key) => key.startsWith(`${prefix}:${tenantTag}:`)) ? tenantTag : userTag;
      for (const key of call.keys) expect(key.startsWith(`${prefix}:${tag}:`), key).toBe(true);
    }
    expect(keySlot(`${prefix}:${userTag}:x`)).toBe(crc16(Buffer.from(userTag.slice(1, -1))) % 16384);
  });
});
