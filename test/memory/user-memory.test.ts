import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ManualClock } from '../../src/core/clock.js';
import { userMemory } from '../../src/memory/user-memory.js';
import type { StateStore } from '../../src/store/types.js';
import { freshScope, STORES } from '../context/stores.js';

describe.each(STORES)('user memory on $name', (kind) => {
  let store: StateStore;
  let cleanup: () => Promise<void>;
  const clock = new ManualClock('2026-03-01T00:00:00.000Z');
  beforeAll(async () => {
    ({ store, cleanup } = await kind.open({ clock }));
  });
  afterAll(async () => cleanup?.());

  it('puts, gets, lists by prefix and deletes', async () => {
    const mem = userMemory(store, freshScope());
    await mem.put('preferences', 'flight_booking.cabin_class', 'business');
    await mem.put('preferences', 'flight_booking.passenger_name', 'Li Lei');
    await mem.put('preferences', 'language', 'zh-CN');
    expect((await mem.get('preferences', 'language'))?.value).toBe('zh-CN');
    const flights = await mem.list('preferences', { prefix: 'flight_booking.' });
    expect(flights.items.map((i) => i.key)).toEqual([
      'flight_booking.cabin_class',
      'flight_booking.passenger_name',
    ]);
    expect((await mem.all('preferences')).map((i) => i.key)).toHaveLength(3);
    expect(await mem.delete('preferences', 'language')).toBe(true);
    expect(await mem.delete('preferences', 'language')).toBe(false);
    expect(await mem.get('preferences', 'language')).toBeNull();
  });

  it('pages through a namespace with all(), up to max', async () => {
    const mem = userMemory(store, freshScope());
    for (let i = 0; i < 7; i++) await mem.put('facts', `k${i}`, i);
    expect((await mem.all('facts')).map((i) => i.value)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(await mem.all('facts', { max: 3 })).toHaveLength(3);
    const first = await mem.list('facts', { limit: 2 });
    expect(first.items).toHaveLength(2);
    expect(first.next_cursor).not.toBeNull();
  });

  it('forgets an item when its TTL passes', async () => {
    const mem = userMemory(store, freshScope());
    await mem.put('facts', 'temporary', 'gone soon', { ttlSeconds: 60 });
    await mem.put('facts', 'lasting', 'stays');
    expect((await mem.get('facts', 'temporary'))?.expires_at).toBe('2026-03-01T00:01:00.000Z');
    clock.advance(61_000);
    expect(await mem.get('facts', 'temporary')).toBeNull();
    expect((await mem.all('facts')).map((i) => i.key)).toEqual(['lasting']);
  });

  it('keeps users apart: user A never sees user B’s memory, even with the same tenant, namespace and key', async () => {
    const a = freshScope('a');
    const b = { tenant_id: a.tenant_id, user_id: `${a.user_id}_b` };
    const otherTenant = { tenant_id: `${a.tenant_id}_x`, user_id: a.user_id };
    await userMemory(store, a).put('preferences', 'cabin', 'economy');
    await userMemory(store, b).put('preferences', 'cabin', 'first');
    expect((await userMemory(store, a).get('preferences', 'cabin'))?.value).toBe('economy');
    expect((await userMemory(store, b).get('preferences', 'cabin'))?.value).toBe('first');
    expect(await userMemory(store, otherTenant).get('preferences', 'cabin')).toBeNull();
    expect((await userMemory(store, b).all('preferences')).map((i) => i.value)).toEqual(['first']);
    expect(await userMemory(store, otherTenant).delete('preferences', 'cabin')).toBe(false);
    expect((await userMemory(store, a).get('preferences', 'cabin'))?.value).toBe('economy');
  });

  it('refuses bad input with invalid_request and stores nothing', async () => {
    const scope = freshScope();
    const mem = userMemory(store, scope);
    const bad = [
      () => mem.put('', 'k', 1),
      () => mem.put('has space', 'k', 1),
      () => mem.put('_summaries:x', 'k', 1),
      () => mem.put('facts', '', 1),
      () => mem.put('facts', 'bad\nkey', 1),
      () => mem.put('facts', 'k', Number.NaN),
      () => mem.put('facts', 'k', { when: new Date() } as never),
      () => mem.put('facts', 'k', 1, { ttlSeconds: 0 }),
      () => mem.put('facts', 'k', 1, { ttlSeconds: 1.5 }),
    ];
    for (const call of bad) {
      await expect(Promise.resolve().then(call)).rejects.toMatchObject({ code: 'invalid_request' });
    }
    expect(await mem.all('facts')).toEqual([]);
    expect(() => userMemory(store, { tenant_id: '', user_id: 'u' })).toThrow(/tenant_id/);
  });

  it('lets agentstate reach its reserved namespaces when asked explicitly', async () => {
    const mem = userMemory(store, freshScope(), { allowReserved: true });
    await mem.put('_summaries:sess_x', 'head', { ok: true });
    expect((await mem.get('_summaries:sess_x', 'head'))?.value).toEqual({ ok: true });
  });

  it('checks values of a typed namespace on the way in and out', async () => {
    const scope = freshScope();
    const cabins = userMemory(store, scope).namespace(
      'preferences',
      z.enum(['economy', 'business', 'first']),
    );
    await cabins.put('cabin_class', 'business');
    expect(await cabins.get('cabin_class')).toBe('business');
    await expect(cabins.put('cabin_class', 'sofa' as never)).rejects.toMatchObject({
      code: 'invalid_request',
    });
    expect(await cabins.get('cabin_class')).toBe('business');
    await userMemory(store, scope).put('preferences', 'seat', 'aisle');
    await expect(cabins.get('seat')).rejects.toMatchObject({ code: 'internal' });
    expect(await cabins.get('missing')).toBeNull();
  });
});
