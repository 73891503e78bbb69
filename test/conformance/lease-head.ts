/**
 * `acquireLeaseWithHead` (optional: the stores that have it). Rules: it takes the lease as `acquireLease`
 * does, and when it did, gives the session's head as `getSessionHead` gives it after the lease was taken;
 * null (nothing read) while another owner holds the lease; `head` null for a session that is missing,
 * expired or another user's (the lease taken all the same); bad input of either is refused before anything
 * is written. Stores without it skip these tests.
 */
import { describe, expect, it } from 'vitest';
import { newId } from '../../src/core/ids.js';
import type { SessionHeadOptions } from '../../src/store/types.js';
import type { Ctx } from './context.js';
import { expectInvalid } from './expect.js';
import { session, task, uniqueKey } from './fixtures.js';

const RUN_HEAD: SessionHeadOptions = { open_tasks: 20, next_run: true };

export function leaseHeadTests(t: Ctx): void {
  describe('lease with head', () => {
    /** The store's acquireLeaseWithHead, or a skip for a store without it. */
    const op = (skip: () => void) => {
      const take = t.store.acquireLeaseWithHead?.bind(t.store);
      if (take === undefined) skip();
      return take as NonNullable<typeof take>;
    };

    it('takes a free lease and reads the head as getSessionHead gives it', async (c) => {
      const take = op(() => c.skip());
      const s = await session(t.store, t.scope);
      await t.store.appendMessages(t.scope, s.id, [
        { role: 'user', content: 'hello' },
        { role: 'assistant', content: 'hi' },
      ]);
      await task(t.store, t.scope, s.id);
      const name = uniqueKey('lease');
      const taken = await take(t.scope, name, 'a', 10_000, s.id, RUN_HEAD);
      expect(taken?.lease).toEqual({
        name,
        owner: 'a',
        expires_at: new Date(t.clock.now() + 10_000).toISOString(),
      });
      expect(taken?.head).toEqual(await t.store.getSessionHead(t.scope, s.id, RUN_HEAD));
      expect(taken?.head?.last_message?.content).toBe('hi');
      expect(taken?.head?.open_tasks).toHaveLength(1);
      const plain = await take(t.scope, uniqueKey('lease'), 'a', 10_000, s.id);
      expect(plain?.head).toEqual(await t.store.getSessionHead(t.scope, s.id));
      expect(await t.store.acquireLease(t.scope, name, 'b', 10_000)).toBeNull();
    });

    it('gives null while another owner holds the lease, and the head once it is freed or expired', async (c) => {
      const take = op(() => c.skip());
      const s = await session(t.store, t.scope);
      const name = uniqueKey('lease');
      await t.store.acquireLease(t.scope, name, 'a', 5_000);
      expect(await take(t.scope, name, 'b', 5_000, s.id, RUN_HEAD)).toBeNull();
      // The holder writes, then frees the lease: the next owner's head holds what it wrote.
      await t.store.appendMessages(t.scope, s.id, [{ role: 'user', content: 'written under a' }]);
      await t.store.releaseLease(t.scope, name, 'a');
      const afterRelease = await take(t.scope, name, 'b', 5_000, s.id, RUN_HEAD);
      expect(afterRelease?.lease.owner).toBe('b');
      expect(afterRelease?.head?.last_message?.content).toBe('written under a');
      // Its owner renews it; once it has expired, another owner takes it and reads what is there now.
      expect((await take(t.scope, name, 'b', 5_000, s.id))?.lease.owner).toBe('b');
      await t.store.appendMessages(t.scope, s.id, [{ role: 'user', content: 'written under b' }]);
      t.clock.advance(4_999);
      expect(await take(t.scope, name, 'c', 5_000, s.id)).toBeNull();
      t.clock.advance(1);
      const afterExpiry = await take(t.scope, name, 'c', 5_000, s.id, RUN_HEAD);
      expect(afterExpiry?.lease.owner).toBe('c');
      expect(afterExpiry?.head).toEqual(await t.store.getSessionHead(t.scope, s.id, RUN_HEAD));
      expect(afterExpiry?.head?.last_message?.content).toBe('written under b');
    });

    it('takes the lease with a null head for a missing, expired or other user’s session', async (c) => {
      const take = op(() => c.skip());
      const missing = await take(t.scope, uniqueKey('lease'), 'a', 1_000, newId('session'), RUN_HEAD);
      expect(missing?.head).toBeNull();
      const theirs = await session(t.store, t.neighbour);
      const name = uniqueKey('lease');
      const other = await take(t.scope, name, 'a', 1_000, theirs.id, RUN_HEAD);
      expect(other).toMatchObject({ lease: { name, owner: 'a' }, head: null });
      expect(await t.store.acquireLease(t.scope, name, 'b', 1_000)).toBeNull();
      const short = await session(t.store, t.scope, 1);
      t.clock.advance(1_001);
      expect((await take(t.scope, uniqueKey('lease'), 'a', 1_000, short.id))?.head).toBeNull();
    });

    it('refuses bad input and writes nothing', async (c) => {
      const take = op(() => c.skip());
      const s = await session(t.store, t.scope);
      const name = uniqueKey('lease');
      const bad: SessionHeadOptions = { open_tasks: 0 };
      await expectInvalid(t.store, take(t.scope, name, 'a', 1_000, s.id, bad), 'open_tasks');
      await expectInvalid(t.store, take(t.scope, name, 'a', 1_000, 'not-an-id'), 'session');
      await expectInvalid(t.store, take(t.scope, name, 'a', 0, s.id), 'ttl_ms');
      await expectInvalid(t.store, take(t.scope, '', 'a', 1_000, s.id), 'name');
      await expectInvalid(t.store, take(t.scope, name, '', 1_000, s.id), 'owner');
      // None of them took the lease.
      expect((await t.store.acquireLease(t.scope, name, 'b', 1_000))?.owner).toBe('b');
    });
  });
}
