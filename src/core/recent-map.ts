/**
 * A Map kept in order of use, least recent first, that holds at most `bound` entries: `set` and `use` make
 * an entry the most recent, and past the bound the least recent go. The caches of the store, the runtime
 * and the server are these.
 *
 * Evictions walk on with one iterator instead of taking a new one each time: in V8 a new Map iterator
 * first steps over every entry deleted from the front since the table was last compacted, and a full
 * cache deletes at the front on every eviction. The kept iterator stays on the oldest entry still there (a
 * Map iterator sees entries moved to the back, and those added later, in their new order).
 */
export class RecentMap<K, V> {
  private readonly map = new Map<K, V>();
  private oldest: Iterator<[K, V]> | null = null;

  /** `bound`: the most entries kept (Infinity: the caller evicts, with `dropOldest`). */
  constructor(private readonly bound: number) {}

  get size(): number {
    return this.map.size;
  }

  /** The value, its place in the order left as it is. */
  get(key: K): V | undefined {
    return this.map.get(key);
  }

  /** The value, made the most recently used. */
  use(key: K): V | undefined {
    const value = this.map.get(key);
    if (value !== undefined) {
      this.map.delete(key);
      this.map.set(key, value);
    }
    return value;
  }

  /** Keeps `value` as the most recently used; drops the least recent past the bound. */
  set(key: K, value: V): void {
    this.map.delete(key);
    this.map.set(key, value);
    while (this.map.size > this.bound) this.dropOldest();
  }

  delete(key: K): boolean {
    return this.map.delete(key);
  }

  clear(): void {
    this.map.clear();
    this.oldest = null;
  }

  /** Removes the least recently used entry and returns it (undefined when empty). */
  dropOldest(): [K, V] | undefined {
    let next = this.oldest?.next();
    if (next === undefined || next.done === true) {
      this.oldest = this.map.entries();
      next = this.oldest.next();
    }
    if (next.done === true) return undefined;
    this.map.delete(next.value[0]);
    return next.value;
  }
}
