/**
 * Session counts for the active-sessions gauge. Rules: sessionStats() answers every status as a key;
 * it counts the sessions not yet expired, across all tenants, by their current status; an expired session
 * leaves the count at once (before any sweep), a deleted one at once, a status change moves it. The suite
 * runs its clock years ahead first, so sessions of earlier tests cannot expire during a test: the counts
 * are compared as differences.
 */
import { describe, expect, it } from 'vitest';
import { SESSION_STATUSES, type SessionStatus } from '../../core/model.js';
import type { Ctx } from './context.js';
import { expectError } from './expect.js';
import { session } from './fixtures.js';

const YEAR_MS = 365 * 24 * 3600 * 1000;

async function delta(t: Ctx, work: () => Promise<void>): Promise<Record<SessionStatus, number>> {
  const before = await t.store.sessionStats();
  await work();
  const after = await t.store.sessionStats();
  const out = {} as Record<SessionStatus, number>;
  for (const status of SESSION_STATUSES) out[status] = after[status] - before[status];
  return out;
}

export function lifecycleStatsTests(t: Ctx): void {
  describe('lifecycle stats', () => {
    it('answers every status, with whole counts', async () => {
      const stats = await t.store.sessionStats();
      expect(Object.keys(stats).sort()).toEqual([...SESSION_STATUSES].sort());
      for (const status of SESSION_STATUSES) expect(Number.isInteger(stats[status])).toBe(true);
      expect(stats.expired).toBe(0);
    });

    it('counts live sessions by status, across tenants and users', async () => {
      t.clock.advance(10 * YEAR_MS);
      const change = await delta(t, async () => {
        await session(t.store, t.scope);
        const moved = await session(t.store, t.neighbour);
        await t.store.createSession(t.stranger, { status: 'waiting_for_user', ttl_seconds: 600 });
        await t.store.updateSession(t.neighbour, moved.id, moved.version, { status: 'paused' });
        const done = await session(t.store, t.stranger);
        await t.store.endSession(t.stranger, done.id);
      });
      expect(change).toEqual({ active: 1, waiting_for_user: 1, paused: 1, ended: 1, expired: 0 });
    });

    it('an expired session leaves the count at once, a renewed one stays, a deleted one leaves', async () => {
      t.clock.advance(20 * YEAR_MS);
      const short = await session(t.store, t.scope, 60);
      const renewed = await session(t.store, t.scope, 60);
      const deleted = await session(t.store, t.scope, 600);
      const change = await delta(t, async () => {
        t.clock.advance(30_000);
        await t.store.touchSession(t.scope, renewed.id);
        await t.store.appendMessages(t.scope, renewed.id, [{ role: 'user', content: 'still here' }]);
        await t.store.deleteSession(t.scope, deleted.id);
        t.clock.advance(30_000);
      });
      expect(change.active).toBe(-2);
      expect(await t.store.getSession(t.scope, short.id)).toBeNull();
      expect(await t.store.getSession(t.scope, renewed.id)).not.toBeNull();
      // sweeping changes nothing more: the count never included the expired session
      const swept = await delta(t, async () => {
        await t.store.sweepExpired(1000);
      });
      expect(swept.active).toBe(0);
    });

    it('fails with closed after close', async () => {
      await t.store.close();
      await expectError(t.store, t.store.sessionStats(), 'closed');
      await expectError(t.store, t.store.sweepRetention({}, 10), 'closed');
    });
  });
}
