/**
 * Action counts for the UNKNOWN-actions gauge. Rules: actionStats() answers { pending, unknown }, whole
 * counts of the actions in status PENDING and UNKNOWN across all tenants and users; a begun action counts
 * as pending at once, marking it unknown moves it, completing or resolving it takes it out, a retry's
 * attempt or a second begin with the same key changes nothing, and retention deleting an old task takes
 * its unfinished actions out. The store is shared with other tests, so the counts are compared as
 * differences; the retention case writes its task 40 years in the past, before anything other tests write.
 */
import { describe, expect, it } from 'vitest';
import type { ActionStats } from '../../store/types.js';
import type { Ctx } from './context.js';
import { expectError } from './expect.js';
import { action, task } from './fixtures.js';

const DAY_MS = 24 * 3600 * 1000;
const PAST_MS = 40 * 365 * DAY_MS;

async function delta(t: Ctx, work: () => Promise<void>): Promise<ActionStats> {
  const before = await t.store.actionStats();
  await work();
  const after = await t.store.actionStats();
  return { pending: after.pending - before.pending, unknown: after.unknown - before.unknown };
}

export function actionStatsTests(t: Ctx): void {
  describe('action stats', () => {
    it('answers whole counts of pending and unknown actions', async () => {
      const stats = await t.store.actionStats();
      expect(Object.keys(stats).sort()).toEqual(['pending', 'unknown']);
      for (const count of [stats.pending, stats.unknown]) {
        expect(Number.isInteger(count)).toBe(true);
        expect(count).toBeGreaterThanOrEqual(0);
      }
    });

    it("counts each step of an action's life, across tenants and users", async () => {
      const tk = await task(t.store, t.scope);
      const begun = await delta(t, async () => {
        for (let i = 0; i < 3; i++) await action(t.store, t.scope, tk.id);
      });
      expect(begun).toEqual({ pending: 3, unknown: 0 });
      const { items } = await t.store.listActions(t.scope, { task_id: tk.id });
      const [first, second, third] = items.map((a) => a.id);
      if (first === undefined || second === undefined || third === undefined) throw new Error('3 actions');

      const marked = await delta(t, async () => {
        await t.store.markActionUnknown(t.scope, first, 'timeout');
        await t.store.markActionUnknown(t.tenant, second, 'no answer');
      });
      expect(marked).toEqual({ pending: -2, unknown: 2 });

      const resolved = await delta(t, async () => {
        await t.store.resolveAction(t.scope, first, { status: 'SUCCESS', result: 1, note: 'checked' });
      });
      expect(resolved).toEqual({ pending: 0, unknown: -1 });

      const unchanged = await delta(t, async () => {
        await t.store.recordAttempt(t.scope, third);
        const again = await t.store.beginAction(t.scope, {
          task_id: tk.id,
          type: 'tool_call',
          params: null,
          idempotency_key: items[2]?.idempotency_key ?? '',
        });
        expect(again.created).toBe(false);
      });
      expect(unchanged).toEqual({ pending: 0, unknown: 0 });

      const completed = await delta(t, async () => {
        await t.store.completeAction(t.scope, third, {
          status: 'FAILED',
          error: { code: 'x', message: 'no' },
        });
      });
      expect(completed).toEqual({ pending: -1, unknown: 0 });

      const others = await delta(t, async () => {
        const theirs = await task(t.store, t.stranger);
        await action(t.store, t.stranger, theirs.id);
        const stuck = await action(t.store, t.stranger, theirs.id);
        await t.store.markActionUnknown(t.stranger, stuck.id, 'timeout');
        const neighbours = await task(t.store, t.neighbour);
        await action(t.store, t.neighbour, neighbours.id);
      });
      expect(others).toEqual({ pending: 2, unknown: 1 });
    });

    it('counts actions begun and completed in turns', async () => {
      const tk = await task(t.store, t.scope);
      let begunId = '';
      const begun = await delta(t, async () => {
        const turn = await t.store.commitTurn(t.scope, {
          begin_actions: [
            { task_id: tk.id, type: 'tool_call', params: null, idempotency_key: `turn-${tk.id}` },
          ],
        });
        begunId = turn.actions[0]?.id ?? '';
      });
      expect(begun).toEqual({ pending: 1, unknown: 0 });
      const done = await delta(t, async () => {
        await t.store.commitTurn(t.scope, { complete_actions: [{ id: begunId, status: 'SUCCESS' }] });
      });
      expect(done).toEqual({ pending: -1, unknown: 0 });
    });

    it('retention deleting an old task takes its pending and unknown actions out', async () => {
      t.clock.advance(-PAST_MS);
      const old = await task(t.store, t.scope);
      const cutoff = new Date(t.clock.now() + DAY_MS).toISOString();
      const change = await delta(t, async () => {
        await action(t.store, t.scope, old.id);
        const stuck = await action(t.store, t.scope, old.id);
        await t.store.markActionUnknown(t.scope, stuck.id, 'timeout');
      });
      expect(change).toEqual({ pending: 1, unknown: 1 });
      const swept = await delta(t, async () => {
        expect(await t.store.sweepRetention({ tasks_before: cutoff }, 1000)).toEqual({
          tasks: 1,
          actions: 2,
          checkpoints: 0,
        });
      });
      expect(swept).toEqual({ pending: -1, unknown: -1 });
    });

    it('fails with closed after close', async () => {
      await t.store.close();
      await expectError(t.store, t.store.actionStats(), 'closed');
    });
  });
}
