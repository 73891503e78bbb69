/**
 * Leases. Rules: acquire succeeds when the lease is free, expired (expires_at <= now) or already held by the
 * same owner (which renews it), and gives null while another owner holds it; release frees it only for
 * the owner that holds it; leases are per tenant and user.
 */
import { describe, expect, it } from 'vitest';
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
}
