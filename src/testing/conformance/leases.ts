/**
 * Leases. Rules: acquire succeeds when the lease is free, expired (expires_at <= now) or already held by the
 * same owner (which renews it), and gives null while another owner holds it; release frees it only for
 * the owner that holds it; leases are per tenant and user.
 */

import { describe, expect, it } from 'vitest';
import { newId } from '../../core/ids.js';
import type { ReadScope, SessionHeadOptions } from '../../store/types.js';
import type { Ctx } from './context.js';
import { expectInvalid, ms } from './expect.js';
import { uniqueKey } from './fixtures.js';

export function leaseTests(t: Ctx): void {
  describe('leases', () => {
    it('is taken when free and refused to another owner while held', async () => {
      const name = uniqueKey('lease');
      const lease = await t.store.acquireLease(t.scope, name, 'worker-a', 10_000);
      expect(lease).toEqual({
        name,
        owner: 'worker-a',
        expires_at: new Date(t.clock.now() + 10_000).toISOString(),
      });
      expect(await t.store.acquireLease(t.scope, name, 'worker-b', 10_000)).toBeNull();
    });

    it('is renewed by its owner', async () => {
      const name = uniqueKey('lease');
      await t.store.acquireLease(t.scope, name, 'a', 10_000);
      t.clock.advance(8000);
      const renewed = await t.store.acquireLease(t.scope, name, 'a', 10_000);
      expect(ms(renewed?.expires_at ?? '')).toBe(t.clock.now() + 10_000);
      t.clock.advance(8000);
      expect(await t.store.acquireLease(t.scope, name, 'b', 10_000)).toBeNull();
    });

    it('can be taken by another owner once expired, so a dead owner never blocks forever', async () => {
      const name = uniqueKey('lease');
      await t.store.acquireLease(t.scope, name, 'a', 5000);
      t.clock.advance(4999);
      expect(await t.store.acquireLease(t.scope, name, 'b', 5000)).toBeNull();
      t.clock.advance(1);
      expect((await t.store.acquireLease(t.scope, name, 'b', 5000))?.owner).toBe('b');
      expect(await t.store.acquireLease(t.scope, name, 'a', 5000)).toBeNull();
      expect(await t.store.releaseLease(t.scope, name, 'a')).toBe(false);
    });

    it('is released only by its owner', async () => {
      const name = uniqueKey('lease');
      await t.store.acquireLease(t.scope, name, 'a', 60_000);
      expect(await t.store.releaseLease(t.scope, name, 'b')).toBe(false);
      expect(await t.store.acquireLease(t.scope, name, 'b', 60_000)).toBeNull();
      expect(await t.store.releaseLease(t.scope, name, 'a')).toBe(true);
      expect(await t.store.releaseLease(t.scope, name, 'a')).toBe(false);
      expect((await t.store.acquireLease(t.scope, name, 'b', 60_000))?.owner).toBe('b');
    });

    it('exactly one of many concurrent owners gets a free lease', async () => {
      const name = uniqueKey('lease');
      const results = await Promise.all(
        Array.from({ length: 10 }, (_, i) => t.store.acquireLease(t.scope, name, `w${i}`, 60_000)),
      );
      expect(results.filter((r) => r !== null)).toHaveLength(1);
    });

    it('leases of one name are separate per user and tenant', async () => {
      const name = uniqueKey('lease');
      expect(await t.store.acquireLease(t.scope, name, 'a', 60_000)).not.toBeNull();
      expect(await t.store.acquireLease(t.neighbour, name, 'b', 60_000)).not.toBeNull();
      expect(await t.store.acquireLease(t.stranger, name, 'c', 60_000)).not.toBeNull();
      expect(await t.store.releaseLease(t.neighbour, name, 'a')).toBe(false);
      expect(await t.store.acquireLease(t.scope, name, 'z', 60_000)).toBeNull();
    });

    it('refuses bad input', async () => {
      const s = t.store;
      await expectInvalid(s, s.acquireLease(t.scope, '', 'a', 1000), 'name');
      await expectInvalid(s, s.acquireLease(t.scope, 'l', '', 1000), 'owner');
      await expectInvalid(s, s.acquireLease(t.scope, 'l', 'a', 0), 'ttl_ms');
      await expectInvalid(s, s.acquireLease(t.scope, 'l', 'a', -1), 'ttl_ms');
      await expectInvalid(s, s.acquireLease(t.scope, 'l', 'a', 1.5), 'ttl_ms');
      await expectInvalid(s, s.releaseLease(t.scope, '', 'a'), 'name');
      expect(await s.acquireLease(t.scope, 'l', 'a', 1000)).not.toBeNull();
    });
  });

  describe("a session's head with its lease (getSessionHead's lease)", () => {
    const asked = (name: string, owner: string, ttl_ms = 10_000) => ({ lease: { name, owner, ttl_ms } });

    it('takes a free lease, then reads the head', async () => {
      const session = await t.store.createSession(t.scope, {});
      await t.store.appendMessages(t.scope, session.id, [{ role: 'user', content: 'hi' }]);
      const name = uniqueKey('lease');
      const head = await t.store.getSessionHead(t.scope, session.id, {
        ...asked(name, 'a'),
        open_tasks: 5,
        next_run: true,
      });
      const plain = await t.store.getSessionHead(t.scope, session.id, { open_tasks: 5, next_run: true });
      expect(head).toEqual({
        ...plain,
        lease: { name, owner: 'a', expires_at: new Date(t.clock.now() + 10_000).toISOString() },
      });
      expect(await t.store.acquireLease(t.scope, name, 'b', 10_000)).toBeNull();
      expect(await t.store.releaseLease(t.scope, name, 'a')).toBe(true);
    });

    it('gives the head with a null lease while another owner holds it', async () => {
      const session = await t.store.createSession(t.scope, {});
      const name = uniqueKey('lease');
      const held = await t.store.acquireLease(t.scope, name, 'b', 10_000);
      const head = await t.store.getSessionHead(t.scope, session.id, asked(name, 'a'));
      expect(head).toEqual({ session, last_message: null, lease: null });
      // The holder's lease is as it was.
      expect(await t.store.releaseLease(t.scope, name, 'a')).toBe(false);
      expect(await t.store.acquireLease(t.scope, name, 'b', 10_000)).toEqual({
        ...held,
        expires_at: new Date(t.clock.now() + 10_000).toISOString(),
      });
    });

    it('renews its own lease and takes an expired one', async () => {
      const session = await t.store.createSession(t.scope, {});
      const name = uniqueKey('lease');
      await t.store.acquireLease(t.scope, name, 'a', 5000);
      t.clock.advance(1000);
      const own = await t.store.getSessionHead(t.scope, session.id, asked(name, 'a', 5000));
      expect(ms(own?.lease?.expires_at ?? '')).toBe(t.clock.now() + 5000);
      t.clock.advance(5000);
      const taken = await t.store.getSessionHead(t.scope, session.id, asked(name, 'b', 5000));
      expect(taken?.lease?.owner).toBe('b');
      expect(taken?.session.id).toBe(session.id);
      expect(await t.store.acquireLease(t.scope, name, 'a', 5000)).toBeNull();
    });

    it("takes no lease for a session that is not there, expired or another user's", async () => {
      // After each, the lease is free for anyone: nothing was left held.
      const noneLeft = async (id: string) => {
        const name = uniqueKey('lease');
        expect(await t.store.getSessionHead(t.scope, id, asked(name, 'a'))).toBeNull();
        expect((await t.store.acquireLease(t.scope, name, 'b', 10_000))?.owner).toBe('b');
      };
      await noneLeft(newId('session'));
      await noneLeft((await t.store.createSession(t.neighbour, {})).id);
      const short = await t.store.createSession(t.scope, { ttl_seconds: 60 });
      t.clock.advance(60_000);
      await noneLeft(short.id);
    });

    it('refuses a bad lease and takes nothing', async () => {
      const s = t.store;
      const session = await s.createSession(t.scope, {});
      const name = uniqueKey('lease');
      const head = (scope: ReadScope, options: unknown) =>
        s.getSessionHead(scope, session.id, options as SessionHeadOptions);
      await expectInvalid(s, head(t.tenant, asked(name, 'a')), 'user_id');
      await expectInvalid(s, head(t.scope, asked('', 'a')), 'options.lease.name');
      await expectInvalid(s, head(t.scope, asked(name, '')), 'options.lease.owner');
      await expectInvalid(s, head(t.scope, asked(name, 'a', 0)), 'options.lease.ttl_ms');
      await expectInvalid(s, head(t.scope, asked(name, 'a', 1.5)), 'options.lease.ttl_ms');
      await expectInvalid(s, head(t.scope, { lease: 'a' }), 'options.lease');
      await expectInvalid(s, head(t.scope, { lease: { name, owner: 'a', ttl_ms: 1000, wait: 1 } }), 'wait');
      await expectInvalid(s, head(t.scope, { ...asked(name, 'a'), open_tasks: 0 }), 'open_tasks');
      await expectInvalid(s, head(t.scope, { ...asked(name, 'a'), next: true }), 'next');
      expect((await s.acquireLease(t.scope, name, 'b', 10_000))?.owner).toBe('b');
    });
  });
}
