/**
 * Long-term memory items. Rules: per (tenant, user, namespace, key); put overwrites and keeps created_at;
 * an optional TTL makes an item invisible the moment it expires; list is ascending by key in binary
 * (code point) order, as COLLATE "C" sorts, with an opaque cursor; `prefix` is literal (no LIKE wildcards).
 */
import { describe, expect, it } from 'vitest';
import type { Ctx } from './context.js';
import { expectInvalid, ms } from './expect.js';
import { collect } from './fixtures.js';

export function memoryTests(t: Ctx): void {
  describe('memory items', () => {
    it('puts, gets, overwrites and deletes an item', async () => {
      const first = await t.store.putMemory(t.scope, { namespace: 'prefs', key: 'seat', value: 'aisle' });
      expect(first).toMatchObject({
        tenant_id: t.scope.tenant_id,
        user_id: t.scope.user_id,
        namespace: 'prefs',
        key: 'seat',
        value: 'aisle',
        expires_at: null,
      });
      expect(await t.store.getMemory(t.scope, 'prefs', 'seat')).toEqual(first);
      t.clock.advance(5000);
      const second = await t.store.putMemory(t.scope, {
        namespace: 'prefs',
        key: 'seat',
        value: { side: 'window', row: [10, 20] },
      });
      expect(second.created_at).toBe(first.created_at);
      expect(ms(second.updated_at)).toBe(t.clock.now());
      expect((await t.store.getMemory(t.scope, 'prefs', 'seat'))?.value).toEqual({
        side: 'window',
        row: [10, 20],
      });
      expect(await t.store.deleteMemory(t.scope, 'prefs', 'seat')).toBe(true);
      expect(await t.store.getMemory(t.scope, 'prefs', 'seat')).toBeNull();
      expect(await t.store.deleteMemory(t.scope, 'prefs', 'seat')).toBe(false);
    });

    it('stores every kind of JSON value, including null, false, 0 and empty string', async () => {
      const values = [null, false, 0, '', [], {}, 1.25, 'ü', [null, [{}]]];
      for (const [i, value] of values.entries()) {
        await t.store.putMemory(t.scope, { namespace: 'kinds', key: `k${i}`, value });
      }
      for (const [i, value] of values.entries()) {
        expect((await t.store.getMemory(t.scope, 'kinds', `k${i}`))?.value).toEqual(value);
      }
    });

    it('namespaces are separate', async () => {
      await t.store.putMemory(t.scope, { namespace: 'a', key: 'k', value: 1 });
      await t.store.putMemory(t.scope, { namespace: 'b', key: 'k', value: 2 });
      expect((await t.store.getMemory(t.scope, 'a', 'k'))?.value).toBe(1);
      expect((await t.store.listMemory(t.scope, 'b')).items.map((i) => i.value)).toEqual([2]);
    });

    it('lists in key order with paging and a literal prefix', async () => {
      const keys = ['b', 'a_1', 'a%2', 'ax3', 'a_0', 'c', 'a', 'ab'];
      for (const key of keys) await t.store.putMemory(t.scope, { namespace: 'n', key, value: key });
      const all = await collect((q) => t.store.listMemory(t.scope, 'n', q), 3);
      expect(all.items.map((i) => i.key)).toEqual([...keys].sort());
      expect(all.pages).toBe(3);
      const underscore = await t.store.listMemory(t.scope, 'n', { prefix: 'a_' });
      expect(underscore.items.map((i) => i.key)).toEqual(['a_0', 'a_1']);
      const percent = await t.store.listMemory(t.scope, 'n', { prefix: 'a%' });
      expect(percent.items.map((i) => i.key)).toEqual(['a%2']);
      const paged = await collect((q) => t.store.listMemory(t.scope, 'n', { ...q, prefix: 'a' }), 2);
      expect(paged.items.map((i) => i.key)).toEqual(['a', 'a%2', 'a_0', 'a_1', 'ab', 'ax3']);
    });

    it('an item with a TTL is invisible the moment it expires; put without TTL clears it', async () => {
      const item = await t.store.putMemory(t.scope, {
        namespace: 'n',
        key: 'otp',
        value: 1234,
        ttl_seconds: 30,
      });
      expect(ms(item.expires_at ?? '')).toBe(t.clock.now() + 30_000);
      t.clock.advance(29_999);
      expect(await t.store.getMemory(t.scope, 'n', 'otp')).not.toBeNull();
      t.clock.advance(1);
      expect(await t.store.getMemory(t.scope, 'n', 'otp')).toBeNull();
      expect((await t.store.listMemory(t.scope, 'n')).items).toEqual([]);
      expect(await t.store.deleteMemory(t.scope, 'n', 'otp')).toBe(false);
      const fresh = await t.store.putMemory(t.scope, { namespace: 'n', key: 'otp', value: 5678 });
      expect(fresh.expires_at).toBeNull();
      expect(ms(fresh.created_at)).toBe(t.clock.now());
      t.clock.advance(365 * 24 * 3600 * 1000);
      expect((await t.store.getMemory(t.scope, 'n', 'otp'))?.value).toBe(5678);
    });

    it('refuses bad input and stores nothing', async () => {
      const s = t.store;
      await expectInvalid(s, s.putMemory(t.scope, { namespace: '', key: 'k', value: 1 }), 'namespace');
      await expectInvalid(s, s.putMemory(t.scope, { namespace: 'n', key: '', value: 1 }), 'key');
      await expectInvalid(
        s,
        s.putMemory(t.scope, { namespace: 'n', key: 'k', value: 1, ttl_seconds: 0 }),
        'ttl',
      );
      await expectInvalid(
        s,
        s.putMemory(t.scope, { namespace: 'n', key: 'k', value: 1, ttl_seconds: -3 }),
        'ttl',
      );
      await expectInvalid(s, s.getMemory(t.scope, '', 'k'), 'namespace');
      await expectInvalid(s, s.listMemory(t.scope, 'n', { limit: 0 }), 'limit');
      await expectInvalid(s, s.listMemory(t.scope, 'n', { cursor: '%%%' }), 'cursor');
      await expectInvalid(s, s.getMemory({ tenant_id: t.scope.tenant_id } as never, 'n', 'k'), 'user_id');
      expect((await s.listMemory(t.scope, 'n')).items).toEqual([]);
    });
  });
}
