import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.js';
import { startSweeper, sweepOnce } from '../../src/lifecycle/sweeper.js';
import { instrumentStore } from '../../src/observability/instrumented-store.js';
import { createMetrics } from '../../src/observability/metrics.js';
import { createMemoryStore } from '../../src/store/memory/index.js';

const scope = { tenant_id: 't_sweep', user_id: 'u_sweep' };

async function storeWithExpired(count: number) {
  const clock = new ManualClock();
  const metrics = createMetrics({ processMetrics: false });
  const store = instrumentStore(createMemoryStore({ clock }), metrics);
  const task = await store.createTask(scope, { type: 'demo' });
  for (let i = 0; i < count; i++) {
    const session = await store.createSession(scope, { ttl_seconds: 60 });
    await store.appendMessages(scope, session.id, [{ role: 'user', content: `hello ${i}` }]);
  }
  const kept = await store.createSession(scope, { ttl_seconds: 3600 });
  clock.advance(61_000);
  return { store, metrics, task, kept };
}

describe('sweeper', () => {
  it('deletes every expired session in batches and leaves live sessions and tasks', async () => {
    const { store, task, kept } = await storeWithExpired(25);
    expect(await sweepOnce(store, 10)).toBe(25);
    expect(await sweepOnce(store, 10)).toBe(0);
    expect(await store.getSession(scope, kept.id)).not.toBeNull();
    expect(await store.getTask(scope, task.id)).not.toBeNull();
    await store.close();
  });

  it('stops at maxPerSweep so one sweep never runs unbounded', async () => {
    const { store } = await storeWithExpired(12);
    expect(await sweepOnce(store, 5, 7)).toBe(7);
    expect(await sweepOnce(store, 5, 7)).toBe(5);
    await store.close();
  });

  it('runs on an interval, counts its runs and deletions, and stops cleanly twice', async () => {
    const { store, metrics } = await storeWithExpired(8);
    const sweeper = startSweeper({ store, intervalMs: 20, batchSize: 3, metrics });
    const deadline = Date.now() + 5_000;
    while ((await metrics.sweeperDeleted.get()).values[0]?.value !== 8) {
      if (Date.now() > deadline) throw new Error('the sweeper did not sweep in time');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    await sweeper.stop();
    await sweeper.stop();
    const runs = await metrics.sweeperRuns.get();
    expect(runs.values.find((v) => v.labels.outcome === 'ok')?.value).toBeGreaterThanOrEqual(1);
    expect((await metrics.sessionsExpired.get()).values[0]?.value).toBe(8);
    await store.close();
  });

  it('keeps running after a failing sweep and reports the error', async () => {
    const { store } = await storeWithExpired(1);
    await store.close();
    const errors: unknown[] = [];
    const sweeper = startSweeper({ store, intervalMs: 10, onError: (error) => errors.push(error) });
    expect(await sweeper.sweepNow()).toBe(0);
    await sweeper.stop();
    expect(errors.length).toBeGreaterThanOrEqual(1);
    expect(String(errors[0])).toContain('closed');
  });
});

describe('sweeper: retention and the active-sessions gauge', () => {
  it('deletes what the policy no longer keeps and sets the gauge from the store counts', async () => {
    const clock = new ManualClock(Date.parse('2026-01-01T00:00:00.000Z'));
    const metrics = createMetrics({ processMetrics: false });
    const store = instrumentStore(createMemoryStore({ clock }), metrics);
    const old = await store.createTask(scope, { type: 'old' });
    await store.putCheckpoint(scope, { run_id: 'r-old', task_id: old.id, step: 0, channels: {} });
    clock.advance(40 * 86_400_000);
    const fresh = await store.createTask(scope, { type: 'fresh' });
    await store.createSession(scope, { ttl_seconds: 600 });
    await store.createSession(scope, { ttl_seconds: 600, status: 'waiting_for_user' });
    const sweeper = startSweeper({ store, clock, metrics, intervalMs: 60_000, retention: { taskDays: 30 } });
    const report = await sweeper.runNow();
    await sweeper.stop();
    expect(report.retention).toEqual({ tasks: 1, actions: 0, checkpoints: 1 });
    expect(await store.getTask(scope, old.id)).toBeNull();
    expect(await store.getTask(scope, fresh.id)).not.toBeNull();
    const gauge = (await metrics.sessionsActive.get()).values;
    expect(gauge.find((v) => v.labels.status === 'active')?.value).toBe(1);
    expect(gauge.find((v) => v.labels.status === 'waiting_for_user')?.value).toBe(1);
    expect(gauge.find((v) => v.labels.status === 'ended')?.value).toBe(0);
    await store.close();
  });

  it('retention false keeps everything; a bad policy fails at start', async () => {
    const clock = new ManualClock(Date.parse('2026-01-01T00:00:00.000Z'));
    const store = createMemoryStore({ clock });
    const old = await store.createTask(scope, { type: 'old' });
    clock.advance(400 * 86_400_000);
    const sweeper = startSweeper({ store, clock, retention: false, intervalMs: 60_000 });
    expect((await sweeper.runNow()).retention).toEqual({ tasks: 0, actions: 0, checkpoints: 0 });
    await sweeper.stop();
    expect(await store.getTask(scope, old.id)).not.toBeNull();
    expect(() => startSweeper({ store, retention: { actionDays: 0 } })).toThrow(/actionDays/);
    await store.close();
  });
});
