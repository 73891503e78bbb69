/**
 * Three OS processes on one Redis store: 3 x 200 read-modify-write increments of one task give exactly
 * 600 (no lost update), and three processes beginning the same idempotency keys at once make one action
 * per key.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { openRedisStore } from '../../src/store/redis/index.js';
import { REDIS_URL, randomPrefix, removePrefix, urlWithPrefix } from './redis-env.js';

const prefix = randomPrefix();
const url = urlWithPrefix(prefix);
const WORKER = fileURLToPath(new URL('./redis-child/work.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
afterAll(() => removePrefix(prefix));

interface Worker {
  readonly proc: ChildProcess;
  readonly ready: Promise<void>;
  readonly result: Promise<unknown>;
}

function worker(args: string[]): Worker {
  const proc = spawn(process.execPath, ['--import', 'tsx', WORKER, ...args], { cwd: ROOT });
  let out = '';
  let err = '';
  let markReady = () => {};
  const ready = new Promise<void>((resolve) => {
    markReady = resolve;
  });
  proc.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString('utf8');
    if (out.startsWith('ready\n')) markReady();
  });
  proc.stderr.on('data', (chunk: Buffer) => {
    err += chunk.toString('utf8');
  });
  const result = new Promise<unknown>((resolve, reject) => {
    proc.on('exit', (code) => {
      markReady();
      if (code !== 0) reject(new Error(`worker exited with ${code}: ${err}`));
      else resolve(JSON.parse(out.trim().split('\n').at(-1) ?? 'null'));
    });
  });
  return { proc, ready, result };
}

/** Starts the workers, waits until every one has opened the store, then lets them go at once. */
async function together(workers: Worker[]): Promise<unknown[]> {
  await Promise.all(workers.map((w) => w.ready));
  for (const w of workers) w.proc.stdin?.write('go\n');
  return Promise.all(workers.map((w) => w.result));
}

describe('redis store across processes', () => {
  const scope = { tenant_id: `t_${randomUUID()}`, user_id: `u_${randomUUID()}` };

  it('3 processes x 200 increments = 600 exactly', { timeout: 120_000 }, async () => {
    const store = await openRedisStore(REDIS_URL, { prefix });
    try {
      const task = await store.createTask(scope, { type: 'counter', data: { counter: 0 } });
      const args = ['increment', url, scope.tenant_id, scope.user_id, task.id, '200'];
      const results = (await together([worker(args), worker(args), worker(args)])) as {
        done: number;
        conflicts: number;
      }[];
      expect(results.map((r) => r.done)).toEqual([200, 200, 200]);
      const final = await store.getTask(scope, task.id);
      expect(final?.data.counter).toBe(600);
      expect(final?.version).toBe(601);
    } finally {
      await store.close();
    }
  });

  it('3 processes beginning the same 20 keys at once make one action per key', {
    timeout: 60_000,
  }, async () => {
    const store = await openRedisStore(REDIS_URL, { prefix });
    try {
      const task = await store.createTask(scope, { type: 'booking' });
      const args = ['begin', url, scope.tenant_id, scope.user_id, task.id, '20'];
      const results = (await together([worker(args), worker(args), worker(args)])) as {
        ids: string[];
        created: number;
      }[];
      expect(results[1]?.ids).toEqual(results[0]?.ids);
      expect(results[2]?.ids).toEqual(results[0]?.ids);
      expect(results.reduce((sum, r) => sum + r.created, 0)).toBe(20);
      const listed = await store.listActions(scope, { task_id: task.id, limit: 100 });
      expect(listed.items.map((a) => a.id).sort()).toEqual([...(results[0]?.ids ?? [])].sort());
    } finally {
      await store.close();
    }
  });
});
