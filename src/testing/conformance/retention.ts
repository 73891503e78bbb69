/**
 * Retention. Rules: sweepRetention(cutoffs, limit) deletes, across tenants, checkpoints created before
 * checkpoints_before (and the blobs no kept checkpoint needs: the kept ones still read whole), finished
 * actions (SUCCESS / FAILED, never PENDING / UNKNOWN) last changed before actions_before, and tasks last
 * changed before tasks_before with their events, actions and checkpoints; at most `limit` of each kind
 * per call; an absent cutoff deletes nothing of its kind. The suite writes its old records 20 years in the
 * past, so the counts are exact even on a database other tests of the suite used.
 */
import { describe, expect, it } from 'vitest';
import type { Ctx } from './context.js';
import { expectInvalid } from './expect.js';
import { action, task, uniqueKey } from './fixtures.js';

const DAY_MS = 24 * 3600 * 1000;
const PAST_MS = 20 * 365 * DAY_MS;

export function retentionTests(t: Ctx): void {
  describe('retention', () => {
    it('deletes old checkpoints, finished actions and tasks; keeps pending, unknown and newer ones', async () => {
      t.clock.advance(-PAST_MS);
      const old = await task(t.store, t.scope);
      const oldTask = await t.store.updateTask(t.scope, old.id, 1, { state: 'COLLECTING' });
      const a1 = await action(t.store, t.scope, old.id);
      await t.store.completeAction(t.scope, a1.id, { status: 'SUCCESS', result: 1 });
      const oldRun = `run-${uniqueKey()}`;
      await t.store.putCheckpoint(t.scope, { run_id: oldRun, task_id: old.id, step: 0, channels: { a: 1 } });
      const kept = await task(t.store, t.neighbour);
      const done = await action(t.store, t.neighbour, kept.id);
      await t.store.completeAction(t.neighbour, done.id, { status: 'SUCCESS' });
      const failed = await action(t.store, t.neighbour, kept.id);
      await t.store.completeAction(t.neighbour, failed.id, {
        status: 'FAILED',
        error: { code: 'x', message: 'no' },
      });
      const pending = await action(t.store, t.neighbour, kept.id);
      const unknown = await action(t.store, t.neighbour, kept.id);
      await t.store.markActionUnknown(t.neighbour, unknown.id, 'timeout');
      const run = `run-${uniqueKey()}`;
      const big = 'x'.repeat(2000);
      for (const [step, log] of [
        [0, ['a']],
        [1, ['a', 'b']],
      ] as const) {
        await t.store.putCheckpoint(t.stranger, { run_id: run, step, channels: { big, log: [...log] } });
      }
      t.clock.advance(DAY_MS);
      const cutoff = new Date(t.clock.now()).toISOString();
      t.clock.advance(DAY_MS);
      const keptNow = await t.store.updateTask(t.neighbour, kept.id, 1, { state: 'COLLECTING' });
      const newer = await action(t.store, t.neighbour, kept.id);
      await t.store.completeAction(t.neighbour, newer.id, { status: 'SUCCESS' });
      const channels = { big, log: ['a', 'b', 'c'] };
      const latest = await t.store.putCheckpoint(t.stranger, { run_id: run, step: 2, channels });

      const swept = await t.store.sweepRetention(
        { tasks_before: cutoff, actions_before: cutoff, checkpoints_before: cutoff },
        1000,
      );
      expect(swept).toEqual({ tasks: 1, actions: 3, checkpoints: 3 });
      expect(await t.store.getTask(t.scope, old.id)).toBeNull();
      expect(await t.store.listTaskEvents(t.scope, old.id)).toEqual([]);
      expect(await t.store.getAction(t.scope, a1.id)).toBeNull();
      expect(await t.store.latestCheckpoint(t.scope, oldRun)).toBeNull();
      expect(await t.store.getTask(t.neighbour, kept.id)).toEqual(keptNow);
      for (const gone of [done, failed]) expect(await t.store.getAction(t.neighbour, gone.id)).toBeNull();
      expect((await t.store.getAction(t.neighbour, pending.id))?.status).toBe('PENDING');
      expect((await t.store.getAction(t.neighbour, unknown.id))?.status).toBe('UNKNOWN');
      expect((await t.store.getAction(t.neighbour, newer.id))?.status).toBe('SUCCESS');
      expect(await t.store.getActionByKey(t.neighbour, pending.idempotency_key)).not.toBeNull();
      const history = await t.store.listCheckpoints(t.stranger, run);
      expect(history.items).toEqual([latest]);
      expect((await t.store.latestCheckpoint(t.stranger, run))?.channels).toEqual(channels);
      expect(oldTask.state).toBe('COLLECTING');
      // the key of a deleted action is free again
      const again = await t.store.beginAction(t.neighbour, {
        task_id: kept.id,
        type: 'tool_call',
        params: null,
        idempotency_key: done.idempotency_key,
      });
      expect(again.created).toBe(true);
    });

    it('a deleted task takes its events, every action and every checkpoint with it, also newer ones', async () => {
      t.clock.advance(-PAST_MS);
      const old = await task(t.store, t.scope);
      const pending = await action(t.store, t.scope, old.id);
      const cutoff = new Date(t.clock.now() + 1000).toISOString();
      t.clock.advance(DAY_MS);
      const run = `run-${uniqueKey()}`;
      const cp = await t.store.putCheckpoint(t.scope, {
        run_id: run,
        task_id: old.id,
        step: 0,
        channels: {},
      });
      const swept = await t.store.sweepRetention({ tasks_before: cutoff }, 100);
      expect(swept).toEqual({ tasks: 1, actions: 1, checkpoints: 1 });
      expect(await t.store.getAction(t.scope, pending.id)).toBeNull();
      expect(await t.store.getCheckpoint(t.scope, cp.id)).toBeNull();
      expect(await t.store.sweepRetention({ tasks_before: cutoff }, 100)).toEqual({
        tasks: 0,
        actions: 0,
        checkpoints: 0,
      });
    });

    it('honours its limit per kind and deletes nothing without cutoffs', async () => {
      t.clock.advance(-PAST_MS);
      const k = await task(t.store, t.scope);
      for (let i = 0; i < 3; i++) {
        const a = await action(t.store, t.scope, k.id);
        await t.store.completeAction(t.scope, a.id, { status: 'SUCCESS' });
      }
      const cutoff = new Date(t.clock.now() + 1000).toISOString();
      expect(await t.store.sweepRetention({}, 100)).toEqual({ tasks: 0, actions: 0, checkpoints: 0 });
      expect((await t.store.sweepRetention({ actions_before: cutoff }, 2)).actions).toBe(2);
      expect((await t.store.sweepRetention({ actions_before: cutoff }, 2)).actions).toBe(1);
      expect((await t.store.sweepRetention({ actions_before: cutoff }, 2)).actions).toBe(0);
      expect(await t.store.getTask(t.scope, k.id)).not.toBeNull();
    });

    it('refuses bad cutoffs and limits', async () => {
      const ok = new Date().toISOString();
      for (const limit of [0, -1, 1.5, 100_001]) {
        await expectInvalid(t.store, t.store.sweepRetention({ tasks_before: ok }, limit), 'limit');
      }
      await expectInvalid(t.store, t.store.sweepRetention({ tasks_before: 'yesterday' }, 10), 'tasks_before');
      await expectInvalid(
        t.store,
        t.store.sweepRetention({ actions_before: '2020-01-01' }, 10),
        'actions_before',
      );
      const extra = { sessions_before: ok } as unknown as { tasks_before?: string };
      await expectInvalid(t.store, t.store.sweepRetention(extra, 10), 'sessions_before');
    });
  });
}
