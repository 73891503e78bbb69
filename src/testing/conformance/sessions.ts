/**
 * Sessions. Rules: version starts at 1 and every update bumps it; a stale version is `version_conflict`;
 * updating a missing (or out-of-scope, or expired) session is `not_found`; status changes follow
 * SESSION_TRANSITIONS; ended sessions stay ended; list is newest first (reverse creation order).
 */
import { describe, expect, it } from 'vitest';
import { isId, newId } from '../../core/ids.js';
import type { Ctx } from './context.js';
import { expectError, expectInvalid, ms } from './expect.js';
import { collect, ids, session } from './fixtures.js';

export function sessionTests(t: Ctx): void {
  describe('sessions', () => {
    it('creates a session with defaults and reads it back', async () => {
      const created = await t.store.createSession(t.scope, {});
      expect(isId(created.id, 'session')).toBe(true);
      expect(created).toMatchObject({
        tenant_id: t.scope.tenant_id,
        user_id: t.scope.user_id,
        agent: null,
        status: 'active',
        context: {},
        version: 1,
        ended_at: null,
      });
      expect(created.ttl_seconds).toBeGreaterThan(0);
      expect(ms(created.expires_at) - t.clock.now()).toBe(created.ttl_seconds * 1000);
      expect(ms(created.created_at)).toBe(t.clock.now());
      expect(await t.store.getSession(t.scope, created.id)).toEqual(created);
    });

    it('keeps a caller-chosen id, agent, context and ttl', async () => {
      const id = newId('session');
      const created = await t.store.createSession(t.scope, {
        id,
        agent: 'flight_booking',
        context: { lang: 'de', tz: 'Europe/Zurich', nested: { list: [1, 'two', null, true] } },
        ttl_seconds: 90,
      });
      expect(created.id).toBe(id);
      expect(created.ttl_seconds).toBe(90);
      expect(ms(created.expires_at)).toBe(t.clock.now() + 90_000);
      const read = await t.store.getSession(t.scope, id);
      expect(read?.context).toEqual({
        lang: 'de',
        tz: 'Europe/Zurich',
        nested: { list: [1, 'two', null, true] },
      });
      expect(read?.agent).toBe('flight_booking');
    });

    it('refuses a second session with an existing id', async () => {
      const first = await session(t.store, t.scope);
      await expectError(t.store, t.store.createSession(t.scope, { id: first.id }), 'conflict', first.id);
      expect(await t.store.getSession(t.scope, first.id)).toEqual(first);
    });

    it('refuses bad input and stores nothing', async () => {
      const s = t.store;
      await expectInvalid(s, s.createSession(t.scope, { id: 'sess_short' }), 'id');
      await expectInvalid(s, s.createSession(t.scope, { id: newId('task') }), 'id');
      await expectInvalid(s, s.createSession(t.scope, { ttl_seconds: 0 }), 'ttl_seconds');
      await expectInvalid(s, s.createSession(t.scope, { ttl_seconds: -5 }), 'ttl_seconds');
      await expectInvalid(s, s.createSession(t.scope, { ttl_seconds: 1.5 }), 'ttl_seconds');
      await expectInvalid(s, s.createSession(t.scope, { status: 'sleeping' as never }), 'status');
      await expectInvalid(s, s.createSession(t.scope, { context: [] as never }), 'session.context');
      await expectInvalid(s, s.createSession({ tenant_id: '', user_id: 'u' }, {}), 'tenant_id');
      await expectInvalid(s, s.createSession({ tenant_id: 't', user_id: '' }, {}), 'user_id');
      expect((await s.listSessions(t.scope)).items).toEqual([]);
    });

    it('updates with the expected version, bumps it and renews the TTL', async () => {
      const created = await session(t.store, t.scope, 60);
      t.clock.advance(30_000);
      const updated = await t.store.updateSession(t.scope, created.id, 1, {
        context: { lang: 'fr' },
        status: 'waiting_for_user',
      });
      expect(updated.version).toBe(2);
      expect(updated.context).toEqual({ lang: 'fr' });
      expect(updated.status).toBe('waiting_for_user');
      expect(ms(updated.expires_at)).toBe(t.clock.now() + 60_000);
      expect(ms(updated.updated_at)).toBe(t.clock.now());
      expect(updated.created_at).toBe(created.created_at);
      expect(await t.store.getSession(t.scope, created.id)).toEqual(updated);
    });

    it('refuses a stale version with version_conflict and changes nothing', async () => {
      const created = await session(t.store, t.scope);
      const v2 = await t.store.updateSession(t.scope, created.id, 1, { context: { step: 1 } });
      const error = await expectError(
        t.store,
        t.store.updateSession(t.scope, created.id, 1, { context: { step: 'lost' } }),
        'version_conflict',
        created.id,
      );
      expect(error.details).toMatchObject({ expected_version: 1, current_version: 2 });
      expect(await t.store.getSession(t.scope, created.id)).toEqual(v2);
    });

    it('changes the ttl through a patch', async () => {
      const created = await session(t.store, t.scope, 60);
      const updated = await t.store.updateSession(t.scope, created.id, 1, { ttl_seconds: 3600 });
      expect(updated.ttl_seconds).toBe(3600);
      expect(ms(updated.expires_at)).toBe(t.clock.now() + 3_600_000);
    });

    it('a patch replaces the context as a whole and may set or clear the agent', async () => {
      const created = await t.store.createSession(t.scope, { context: { a: 1, b: { c: 2 } } });
      const withAgent = await t.store.updateSession(t.scope, created.id, 1, {
        context: { b: {} },
        agent: 'deploy',
      });
      expect(withAgent.context).toEqual({ b: {} });
      expect(withAgent.agent).toBe('deploy');
      const cleared = await t.store.updateSession(t.scope, created.id, 2, { agent: null });
      expect(cleared.agent).toBeNull();
      expect(cleared.context).toEqual({ b: {} });
      expect(await t.store.getSession(t.scope, created.id)).toEqual(cleared);
    });

    it('updating a missing session is not_found', async () => {
      const id = newId('session');
      await expectError(t.store, t.store.updateSession(t.scope, id, 1, { context: {} }), 'not_found', id);
    });

    it('follows the session status rules: ended stays ended, expired is never set by a caller', async () => {
      const created = await session(t.store, t.scope);
      const paused = await t.store.updateSession(t.scope, created.id, 1, { status: 'paused' });
      const ended = await t.store.updateSession(t.scope, created.id, paused.version, { status: 'ended' });
      expect(ended.status).toBe('ended');
      expect(ended.ended_at).not.toBeNull();
      await expectInvalid(
        t.store,
        t.store.updateSession(t.scope, created.id, ended.version, { status: 'active' }),
        'ended',
        'active',
      );
      const other = await session(t.store, t.scope);
      await expectInvalid(
        t.store,
        t.store.updateSession(t.scope, other.id, 1, { status: 'expired' }),
        'expired',
      );
      expect((await t.store.getSession(t.scope, other.id))?.status).toBe('active');
    });

    it('touch renews the TTL without changing the version', async () => {
      const created = await session(t.store, t.scope, 60);
      t.clock.advance(59_000);
      const touched = await t.store.touchSession(t.scope, created.id);
      expect(touched?.version).toBe(1);
      expect(ms(touched?.expires_at ?? '')).toBe(t.clock.now() + 60_000);
      expect(ms(touched?.last_activity_at ?? '')).toBe(t.clock.now());
      t.clock.advance(59_000);
      expect(await t.store.getSession(t.scope, created.id)).not.toBeNull();
      expect(await t.store.touchSession(t.scope, newId('session'))).toBeNull();
    });

    it('end sets status ended, bumps the version, and is null for a missing session', async () => {
      const created = await session(t.store, t.scope);
      const ended = await t.store.endSession(t.scope, created.id);
      expect(ended?.status).toBe('ended');
      expect(ended?.ended_at).toBe(new Date(t.clock.now()).toISOString());
      expect(ended?.version).toBe(2);
      await expectError(t.store, t.store.updateSession(t.scope, created.id, 1, {}), 'version_conflict');
      const again = await t.store.endSession(t.scope, created.id);
      expect(again?.status).toBe('ended');
      expect(await t.store.endSession(t.scope, newId('session'))).toBeNull();
    });

    it('delete removes the session and its messages; tasks stay', async () => {
      const created = await session(t.store, t.scope);
      await t.store.appendMessages(t.scope, created.id, [{ role: 'user', content: 'hi' }]);
      const task = await t.store.createTask(t.scope, { type: 'x', session_id: created.id });
      expect(await t.store.deleteSession(t.scope, created.id)).toBe(true);
      expect(await t.store.getSession(t.scope, created.id)).toBeNull();
      expect(await t.store.listMessages(t.scope, created.id)).toEqual([]);
      expect(await t.store.getTask(t.scope, task.id)).toEqual(task);
      expect(await t.store.deleteSession(t.scope, created.id)).toBe(false);
      await t.store.createSession(t.scope, { id: created.id });
      expect(await t.store.listMessages(t.scope, created.id)).toEqual([]);
      const added = await t.store.appendMessages(t.scope, created.id, [{ role: 'user', content: 'again' }]);
      expect(added.map((m) => m.seq)).toEqual([1]);
    });

    it('lists newest first and filters by status', async () => {
      const made = [];
      for (let i = 0; i < 4; i++) {
        made.push(await session(t.store, t.scope));
        t.clock.advance(1000);
      }
      await t.store.updateSession(t.scope, made[1]!.id, 1, { status: 'paused' });
      const all = await t.store.listSessions(t.scope);
      expect(ids(all.items)).toEqual(ids(made).reverse());
      expect(all.next_cursor).toBeNull();
      const paused = await t.store.listSessions(t.scope, { status: 'paused' });
      expect(ids(paused.items)).toEqual([made[1]!.id]);
    });

    it('pages with an opaque cursor: every session exactly once, even when created in the same millisecond', async () => {
      const made = [];
      for (let i = 0; i < 7; i++) made.push(await session(t.store, t.scope));
      const { items, pages } = await collect((q) => t.store.listSessions(t.scope, q), 3);
      expect(pages).toBe(3);
      expect(new Set(ids(items)).size).toBe(7);
      expect(ids(items).sort()).toEqual(ids(made).sort());
    });

    it('a cursor stays valid while new sessions are created', async () => {
      const made = [];
      for (let i = 0; i < 5; i++) {
        made.push(await session(t.store, t.scope));
        t.clock.advance(1000);
      }
      const first = await t.store.listSessions(t.scope, { limit: 2 });
      await session(t.store, t.scope);
      const rest = await collect(
        (q) => t.store.listSessions(t.scope, { ...q, cursor: q.cursor ?? first.next_cursor }),
        2,
      );
      expect([...ids(first.items), ...ids(rest.items)]).toEqual(ids(made).reverse());
    });

    it('refuses bad limits and cursors', async () => {
      const s = t.store;
      for (const limit of [0, -1, 501, 2.5]) {
        await expectInvalid(s, s.listSessions(t.scope, { limit }), 'limit');
      }
      await expectInvalid(s, s.listSessions(t.scope, { cursor: 'not a cursor!' }), 'cursor');
      await expectInvalid(s, s.listSessions(t.scope, { status: 'nope' as never }), 'status');
      expect((await s.listSessions(t.scope, { limit: 500 })).items).toEqual([]);
    });

    it('refuses malformed ids on every session call', async () => {
      const s = t.store;
      await expectInvalid(s, s.getSession(t.scope, 'nope'));
      await expectInvalid(s, s.getSession(t.scope, newId('task')));
      await expectInvalid(s, s.updateSession(t.scope, 'nope', 1, {}));
      await expectInvalid(s, s.touchSession(t.scope, 'nope'));
      await expectInvalid(s, s.endSession(t.scope, 'nope'));
      await expectInvalid(s, s.deleteSession(t.scope, 'nope'));
    });

    it('refuses a bad expected version and a bad patch', async () => {
      const created = await session(t.store, t.scope);
      await expectInvalid(t.store, t.store.updateSession(t.scope, created.id, -1, {}), 'expected_version');
      await expectInvalid(t.store, t.store.updateSession(t.scope, created.id, 1.5, {}), 'expected_version');
      await expectInvalid(
        t.store,
        t.store.updateSession(t.scope, created.id, 1, { ttl_seconds: 0 }),
        'ttl_seconds',
      );
      await expectInvalid(
        t.store,
        t.store.updateSession(t.scope, created.id, 1, { status: 'x' as never }),
        'status',
      );
      expect(await t.store.getSession(t.scope, created.id)).toEqual(created);
    });
  });
}
