/** RecentMap: at most its bound of entries, least recently used dropped first, `get` not counting as use. */
import { describe, expect, it } from 'vitest';
import { RecentMap } from '../../src/core/recent-map.js';

describe('RecentMap', () => {
  it('keeps at most its bound, dropping the least recently set or used', () => {
    const map = new RecentMap<string, number>(3);
    map.set('a', 1);
    map.set('b', 2);
    map.set('c', 3);
    expect(map.use('a')).toBe(1); // a is now the most recent
    expect(map.get('b')).toBe(2); // a plain read changes no order
    map.set('d', 4);
    expect([map.get('a'), map.get('b'), map.get('c'), map.get('d')]).toEqual([1, undefined, 3, 4]);
    map.set('c', 30); // setting again makes it the most recent
    map.set('e', 5);
    expect(map.get('a')).toBeUndefined();
    expect(map.size).toBe(3);
    expect(map.dropOldest()).toEqual(['d', 4]);
    expect(map.dropOldest()).toEqual(['c', 30]);
    expect(map.dropOldest()).toEqual(['e', 5]);
    expect(map.dropOldest()).toBeUndefined();
    map.set('f', 6);
    expect(map.dropOldest()).toEqual(['f', 6]);
  });

  it('drops in the order of a reference LRU through many sets, uses, deletes and clears', () => {
    const map = new RecentMap<number, number>(50);
    const order: number[] = [];
    const touch = (key: number) => {
      const at = order.indexOf(key);
      if (at >= 0) order.splice(at, 1);
      order.push(key);
    };
    let seed = 11;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    for (let step = 0; step < 20_000; step++) {
      const key = random(120);
      const kind = random(10);
      if (kind < 4) {
        map.set(key, step);
        touch(key);
        if (order.length > 50) order.shift();
      } else if (kind < 8) {
        const had = order.includes(key);
        expect(map.use(key) !== undefined).toBe(had);
        if (had) touch(key);
      } else if (kind < 9) {
        map.delete(key);
        if (order.includes(key)) order.splice(order.indexOf(key), 1);
      } else if (step % 997 === 0) {
        map.clear();
        order.length = 0;
      } else {
        expect(map.dropOldest()?.[0]).toBe(order.shift());
      }
      expect(map.size).toBe(order.length);
    }
    const left: number[] = [];
    for (let entry = map.dropOldest(); entry !== undefined; entry = map.dropOldest()) left.push(entry[0]);
    expect(left).toEqual(order);
  });
});
