import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.js';
import { pruneCompletedRun } from '../../src/lifecycle/prune.js';
import { retentionCutoffs } from '../../src/lifecycle/retention.js';
import { changeSessionStatus, sessionStatusPatch } from '../../src/lifecycle/session-policy.js';
import { createMemoryStore } from '../../src/store/memory/index.js';

const scope = { tenant_id: 't_policy', user_id: 'u_policy' };

describe('session policy', () => {
  it('waiting for the user raises the TTL to 24 h; going back to active restores the default', async () => {
    const clock = new ManualClock();
    const store = createMemoryStore({ clock });
    const session = await store.createSession(scope, {});
    const waiting = await changeSessionStatus(store, scope, session, 'waiting_for_user');
    expect(waiting.ttl_seconds).toBe(86_400);
    clock.advance(23 * 3600 * 1000);
    expect(await store.getSession(scope, session.id)).not.toBeNull();
    const back = await changeSessionStatus(store, scope, waiting, 'active');
    expect(back.ttl_seconds).toBe(1800);
    clock.advance(1800 * 1000);
    expect(await store.getSession(scope, session.id)).toBeNull();
    await store.close();
  });

  it('keeps a longer per-session TTL, and a custom policy applies', () => {
    expect(sessionStatusPatch({ status: 'active', ttl_seconds: 200_000 }, 'waiting_for_user')).toEqual({
      status: 'waiting_for_user',
      ttl_seconds: 200_000,
    });
    const policy = { ttlSeconds: 600, waitingTtlSeconds: 7200 };
    expect(sessionStatusPatch({ status: 'active', ttl_seconds: 600 }, 'waiting_for_user', policy)).toEqual({
      status: 'waiting_for_user',
      ttl_seconds: 7200,
    });
    expect(sessionStatusPatch({ status: 'waiting_for_user', ttl_seconds: 7200 }, 'paused', policy)).toEqual({
      status: 'paused',
      ttl_seconds: 600,
    });
    expect(sessionStatusPatch({ status: 'active', ttl_seconds: 90 }, 'paused', policy)).toEqual({
      status: 'paused',
    });
    expect(() =>
      sessionStatusPatch({ status: 'active', ttl_seconds: 1 }, 'paused', { ttlSeconds: 0 }),
    ).toThrow(/ttlSeconds/);
  });
});

describe('retention policy', () => {
  it('turns days into cutoffs, 30 by default, null keeps forever', () => {
    const now = Date.parse('2026-03-31T00:00:00.000Z');
    expect(retentionCutoffs({}, now)).toEqual({
      tasks_before: '2026-03-01T00:00:00.000Z',
      actions_before: '2026-03-01T00:00:00.000Z',
      checkpoints_before: '2026-03-01T00:00:00.000Z',
    });
    expect(retentionCutoffs({ taskDays: null, actionDays: 1, checkpointDays: 0.5 }, now)).toEqual({
      actions_before: '2026-03-30T00:00:00.000Z',
      checkpoints_before: '2026-03-30T12:00:00.000Z',
    });
    expect(() => retentionCutoffs({ taskDays: -1 }, now)).toThrow(/taskDays/);
  });
});

describe('pruneCompletedRun', () => {
  it('keeps the last N checkpoints of a run, readable whole', async () => {
    const store = createMemoryStore();
    for (let step = 0; step < 6; step++) {
      await store.putCheckpoint(scope, { run_id: 'run-1', step, channels: { step } });
    }
    expect(await pruneCompletedRun(store, scope, 'run-1', 2)).toBe(4);
    const left = await store.listCheckpoints(scope, 'run-1');
    expect(left.items.map((c) => c.step)).toEqual([5, 4]);
    await expect(pruneCompletedRun(store, scope, 'run-1', 0)).rejects.toThrow(/keep/);
    await store.close();
  });
});
