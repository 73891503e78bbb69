/**
 * Expiry. Rules: a session with expires_at <= now is invisible at once to every read and write
 * (get, list, messages, last messages, touch, update, end, delete, append), before any sweep: reads give
 * null / [] / false, writes give `not_found`. sweepExpired(limit) removes up to `limit` expired sessions
 * with their messages and returns how many; tasks, actions and checkpoints stay.
 */
import { describe, expect, it } from 'vitest';
import type { Ctx } from './context.js';
import { expectError, expectInvalid } from './expect.js';
import { action, ids, session, task, uniqueKey } from './fixtures.js';

export function expiryTests(t: Ctx): void {
  describe('expiry', () => {
    it('a session is visible until the last millisecond and invisible exactly at expires_at', async () => {
      const s = await session(t.store, t.scope, 60);
      t.clock.advance(59_999);
      expect(await t.store.getSession(t.scope, s.id)).not.toBeNull();
      t.clock.advance(1);
      expect(await t.store.getSession(t.scope, s.id)).toBeNull();
    });

    it('an expired session is invisible to every read and write at once, before any sweep', async () => {
      const s = await session(t.store, t.scope, 60);
      await t.store.appendMessages(t.scope, s.id, [{ role: 'user', content: 'hello' }]);
      const keep = await session(t.store, t.scope, 3600);
      t.clock.advance(60_000);
      expect(await t.store.getSession(t.scope, s.id)).toBeNull();
      expect(await t.store.getSession(t.tenant, s.id)).toBeNull();
      expect(ids((await t.store.listSessions(t.scope)).items)).toEqual([keep.id]);
      expect(ids((await t.store.listSessions(t.tenant)).items)).toEqual([keep.id]);
      expect(ids((await t.store.listSessions(t.scope, { status: 'active' })).items)).toEqual([keep.id]);
      expect(await t.store.listMessages(t.scope, s.id)).toEqual([]);
      expect(await t.store.lastMessages(t.scope, s.id, 10)).toEqual([]);
      expect(await t.store.touchSession(t.scope, s.id)).toBeNull();
      expect(await t.store.endSession(t.scope, s.id)).toBeNull();
      await expectError(t.store, t.store.updateSession(t.scope, s.id, 1, {}), 'not_found', s.id);
      await expectError(
        t.store,
        t.store.appendMessages(t.scope, s.id, [{ role: 'user', content: 'late' }]),
        'not_found',
        s.id,
      );
      expect(await t.store.deleteSession(t.scope, s.id)).toBe(false);
      expect(await t.store.getSession(t.scope, s.id)).toBeNull();
    });

    it('touching before expiry keeps a session alive (sliding TTL)', async () => {
      const s = await session(t.store, t.scope, 60);
      for (let i = 0; i < 5; i++) {
        t.clock.advance(45_000);
        expect(await t.store.touchSession(t.scope, s.id)).not.toBeNull();
      }
      t.clock.advance(59_000);
      expect(await t.store.getSession(t.scope, s.id)).not.toBeNull();
      t.clock.advance(1000);
      expect(await t.store.getSession(t.scope, s.id)).toBeNull();
    });

    it('appending messages renews the TTL, of the default length and of a session of its own', async () => {
      const own = await session(t.store, t.scope, 60);
      const usual = await t.store.createSession(t.scope, {});
      expect(usual.ttl_seconds).toBeGreaterThan(60);
      t.clock.advance(45_000);
      await t.store.appendMessages(t.scope, own.id, [{ role: 'user', content: 'own' }]);
      const committed = await t.store.commitTurn(t.scope, {
        messages: { session_id: usual.id, items: [{ role: 'user', content: 'usual' }] },
      });
      const at = t.clock.now();
      const expiry = async (id: string) =>
        Date.parse((await t.store.getSession(t.scope, id))?.expires_at ?? '');
      expect(await expiry(own.id)).toBe(at + 60_000);
      expect(await expiry(usual.id)).toBe(at + usual.ttl_seconds * 1000);
      // the commit answers the session as stored, its renewed expiry included
      expect(Date.parse(committed.session?.expires_at ?? '')).toBe(at + usual.ttl_seconds * 1000);
      t.clock.advance(59_999);
      expect(await t.store.getSession(t.scope, own.id)).not.toBeNull();
      t.clock.advance(1);
      expect(await t.store.getSession(t.scope, own.id)).toBeNull();
      expect(await t.store.getSession(t.scope, usual.id)).not.toBeNull();
    });

    it('the sweep removes expired sessions and their messages; tasks, actions and checkpoints stay', async () => {
      const s = await session(t.store, t.scope, 60);
      await t.store.appendMessages(t.scope, s.id, [{ role: 'user', content: 'hello' }]);
      const k = await task(t.store, t.scope, s.id);
      const a = await action(t.store, t.scope, k.id);
      const run = `run-${uniqueKey()}`;
      const cp = await t.store.putCheckpoint(t.scope, {
        run_id: run,
        session_id: s.id,
        step: 0,
        channels: { a: 1 },
      });
      const alive = await session(t.store, t.scope, 3600);
      t.clock.advance(61_000);
      let swept = 0;
      for (let i = 0; i < 100; i++) {
        const n = await t.store.sweepExpired(500);
        swept += n;
        if (n === 0) break;
      }
      expect(swept).toBeGreaterThanOrEqual(1);
      expect(await t.store.getSession(t.scope, s.id)).toBeNull();
      expect(await t.store.getSession(t.scope, alive.id)).not.toBeNull();
      expect(await t.store.getTask(t.scope, k.id)).toEqual(k);
      expect(await t.store.getAction(t.scope, a.id)).toEqual(a);
      expect(await t.store.getCheckpoint(t.scope, cp.id)).toEqual(cp);
      expect(await t.store.listTaskEvents(t.scope, k.id)).toHaveLength(1);
      // a later clock that made the session live again would not bring it or its messages back
      t.clock.advance(-61_000);
      expect(await t.store.getSession(t.scope, s.id)).toBeNull();
      expect(await t.store.listMessages(t.scope, s.id)).toEqual([]);
      // the id is free again, and a session created with it starts without the old messages
      const reborn = await t.store.createSession(t.scope, { id: s.id, ttl_seconds: 60 });
      expect(reborn.version).toBe(1);
      expect(await t.store.listMessages(t.scope, s.id)).toEqual([]);
      const added = await t.store.appendMessages(t.scope, s.id, [{ role: 'user', content: 'new' }]);
      expect(added.map((m) => m.seq)).toEqual([1]);
    });

    it('an expired session that is not swept yet still holds its id', async () => {
      const s = await session(t.store, t.scope, 60);
      t.clock.advance(60_000);
      await expectError(t.store, t.store.createSession(t.scope, { id: s.id }), 'conflict', s.id);
    });

    it('the sweep honours its limit and reports what it removed', async () => {
      const made = [];
      for (let i = 0; i < 3; i++) made.push(await session(t.store, t.scope, 1));
      t.clock.advance(2000);
      expect(await t.store.sweepExpired(2)).toBe(2);
      let rest = 0;
      for (let i = 0; i < 100; i++) {
        const n = await t.store.sweepExpired(100);
        rest += n;
        if (n === 0) break;
      }
      expect(rest).toBeGreaterThanOrEqual(1);
      t.clock.advance(-2000);
      for (const s of made) expect(await t.store.getSession(t.scope, s.id)).toBeNull();
    });

    it('the sweep leaves live sessions alone', async () => {
      const s = await session(t.store, t.scope, 60);
      await t.store.appendMessages(t.scope, s.id, [{ role: 'user', content: 'hi' }]);
      t.clock.advance(59_000);
      await t.store.sweepExpired(500);
      expect(await t.store.getSession(t.scope, s.id)).not.toBeNull();
      expect(await t.store.listMessages(t.scope, s.id)).toHaveLength(1);
    });

    it('refuses a bad sweep limit', async () => {
      for (const limit of [0, -1, 1.5]) await expectInvalid(t.store, t.store.sweepExpired(limit), 'limit');
    });

    it('the default TTL applies when a session names none, and a new session is alive until then', async () => {
      const s = await t.store.createSession(t.scope, {});
      t.clock.advance(s.ttl_seconds * 1000 - 1);
      expect(await t.store.getSession(t.scope, s.id)).not.toBeNull();
      t.clock.advance(1);
      expect(await t.store.getSession(t.scope, s.id)).toBeNull();
    });
  });
}
