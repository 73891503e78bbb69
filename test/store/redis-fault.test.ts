/**
 * Redis going away under load: the test runs its own `redis-server` on a free port, kills it (SIGKILL)
 * while calls are in flight, checks that calls fail with store_unavailable instead of hanging, starts the
 * server again on the same port and checks the same store works again without being re-opened.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { type AgentStateError, isAgentStateError } from '../../src/core/errors.js';
import { openRedisStore } from '../../src/store/redis/index.js';
import type { StateStore } from '../../src/store/types.js';

const servers: ChildProcess[] = [];
afterEach(() => {
  for (const server of servers.splice(0)) server.kill('SIGKILL');
});

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

/** Starts redis-server without persistence; resolves once it accepts connections. */
async function startRedis(port: number): Promise<ChildProcess> {
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'];
  const server = spawn('redis-server', [...args, '--daemonize', 'no']);
  servers.push(server);
  let out = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`redis-server did not start: ${out}`)), 10_000);
    server.on('error', reject);
    server.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8');
      if (out.includes('Ready to accept connections')) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
  return server;
}

async function kill(server: ChildProcess): Promise<void> {
  const exited = new Promise((resolve) => server.once('exit', resolve));
  server.kill('SIGKILL');
  await exited;
}

function expectUnavailable(error: unknown): void {
  expect(isAgentStateError(error), String(error)).toBe(true);
  expect((error as AgentStateError).code, (error as Error).message).toBe('store_unavailable');
  expect((error as Error).message.startsWith('[redis]')).toBe(true);
}

/** One unit of load: a session with two messages; resolves to the error, or null on success. */
async function unit(store: StateStore, user: string): Promise<unknown> {
  try {
    const scope = { tenant_id: 't_fault', user_id: user };
    const session = await store.createSession(scope, {});
    await store.appendMessages(scope, session.id, [
      { role: 'user', content: 'a' },
      { role: 'assistant', content: 'b' },
    ]);
    return null;
  } catch (error) {
    return error;
  }
}

describe('redis store when the server goes away', () => {
  it('fails fast with store_unavailable while Redis is down and recovers without re-opening', {
    timeout: 60_000,
  }, async () => {
    const port = await freePort();
    let server = await startRedis(port);
    const store = await openRedisStore(`redis://127.0.0.1:${port}`, { prefix: 'fault' });
    try {
      // Load from 4 loops; kill the server while they run.
      let stop = false;
      const outcomes: unknown[] = [];
      const loops = [0, 1, 2, 3].map(async (n) => {
        while (!stop) outcomes.push(await unit(store, `u${n}`));
      });
      for (let i = 0; i < 100 && outcomes.filter((o) => o === null).length < 5; i++) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      await kill(server);
      await new Promise((resolve) => setTimeout(resolve, 500));
      stop = true;
      await loops;
      const failures = outcomes.filter((o) => o !== null);
      expect(outcomes.filter((o) => o === null).length).toBeGreaterThan(0);
      expect(failures.length).toBeGreaterThan(0);
      for (const failure of failures) expectUnavailable(failure);

      // While it is down, every call fails (and none hangs: the test's timeout would catch it).
      expectUnavailable(await unit(store, 'down'));
      await expect(
        store.getSession({ tenant_id: 't_fault' }, 'sess_aaaaaaaaaaaaaaaaaaaaaaaaaa'),
      ).rejects.toSatisfy((error) => isAgentStateError(error, 'store_unavailable'));
      expect(await store.ping()).toBe(false);

      // Same port again (an empty server: no persistence); the store reconnects by itself.
      server = await startRedis(port);
      const deadline = Date.now() + 15_000;
      while (!(await store.ping()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      expect(await store.ping()).toBe(true);
      expect(await unit(store, 'back')).toBeNull();
      const scope = { tenant_id: 't_fault', user_id: 'back' };
      const listed = await store.listSessions(scope);
      expect(listed.items).toHaveLength(1);
      const id = listed.items[0]?.id ?? '';
      expect((await store.listMessages(scope, id)).map((m) => m.seq)).toEqual([1, 2]);
    } finally {
      await store.close();
    }
  });

  it('a server refusing writes (out of memory) is store_unavailable, and fine again after', {
    timeout: 30_000,
  }, async () => {
    const port = await freePort();
    await startRedis(port);
    const admin = new Redis(`redis://127.0.0.1:${port}`);
    const store = await openRedisStore(`redis://127.0.0.1:${port}`, { prefix: 'oom' });
    try {
      await admin.config('SET', 'maxmemory', '1');
      expectUnavailable(await unit(store, 'oom'));
      await admin.config('SET', 'maxmemory', '0');
      expect(await unit(store, 'oom')).toBeNull();
    } finally {
      await store.close();
      admin.disconnect();
    }
  });

  it('opening a store while Redis is down is store_unavailable', { timeout: 20_000 }, async () => {
    const port = await freePort();
    await expect(openRedisStore(`redis://127.0.0.1:${port}`, { prefix: 'fault' })).rejects.toSatisfy(
      (error) => isAgentStateError(error, 'store_unavailable'),
    );
  });
});
