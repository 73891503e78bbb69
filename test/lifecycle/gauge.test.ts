/**
 * The gauges a sweep sets from the store's counts, read from the server's real /metrics output:
 * `agentstate_actions_unknown` shows the actions waiting in UNKNOWN across tenants after a sweep, and
 * goes down after the next sweep once one is resolved. On the memory, SQLite and Redis stores.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createServer } from '../../src/http/server.js';
import { startSweeper } from '../../src/lifecycle/sweeper.js';
import { instrumentStore } from '../../src/observability/instrumented-store.js';
import { createMetrics } from '../../src/observability/metrics.js';
import { createMemoryStore } from '../../src/store/memory/index.js';
import { openRedisStore } from '../../src/store/redis/index.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import type { Scope, StateStore } from '../../src/store/types.js';
import { REDIS_URL, randomPrefix, removePrefix } from '../store/redis-env.js';

const dir = mkdtempSync(join(tmpdir(), 'agentstate-gauge-'));
const prefix = randomPrefix();
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await removePrefix(prefix);
});

const stores: [string, () => Promise<StateStore>][] = [
  ['memory', async () => createMemoryStore()],
  ['sqlite', () => openSqliteStore(join(dir, 'gauge.db'))],
  ['redis', () => openRedisStore(REDIS_URL, { prefix })],
];

async function unknownAction(store: StateStore, scope: Scope, n: number) {
  const task = await store.createTask(scope, { type: 'flight_booking' });
  const { action } = await store.beginAction(scope, {
    task_id: task.id,
    type: 'tool_call',
    tool: 'book_flight',
    params: { n },
    idempotency_key: `book-${n}`,
  });
  return store.markActionUnknown(scope, action.id, 'the airline did not answer');
}

describe.each(stores)('sweep gauges on %s', (_name, open) => {
  it('agentstate_actions_unknown shows the UNKNOWN actions after every sweep', async () => {
    const metrics = createMetrics({ processMetrics: false });
    const store = instrumentStore(await open(), metrics);
    const app = await createServer({ store, metrics, logger: false });
    const sweeper = startSweeper({ store, metrics, intervalMs: 3_600_000, retention: false });
    const scrape = async () => {
      const response = await app.inject({ method: 'GET', url: '/metrics' });
      expect(response.statusCode).toBe(200);
      const line = /^agentstate_actions_unknown (\d+)$/m.exec(response.body);
      expect(line, 'agentstate_actions_unknown in /metrics').not.toBeNull();
      return Number(line?.[1]);
    };
    try {
      const before = await sweeper.runNow().then(scrape);
      const alice = { tenant_id: `t_a${randomPrefix()}`, user_id: 'alice' };
      const bob = { tenant_id: `t_b${randomPrefix()}`, user_id: 'bob' };
      const first = await unknownAction(store, alice, 1);
      await unknownAction(store, bob, 2);
      // a PENDING action is not counted
      const task = await store.createTask(alice, { type: 'flight_booking' });
      await store.beginAction(alice, {
        task_id: task.id,
        type: 'tool_call',
        params: {},
        idempotency_key: 'p',
      });
      expect(await scrape()).toBe(before);
      await sweeper.runNow();
      expect(await scrape()).toBe(before + 2);
      await store.resolveAction(alice, first.id, { status: 'SUCCESS', note: 'the booking exists' });
      await sweeper.runNow();
      expect(await scrape()).toBe(before + 1);
    } finally {
      await sweeper.stop();
      await app.close();
      await store.close();
    }
  });
});
