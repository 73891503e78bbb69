/**
 * Turns of one process run oldest first. A turn runs on the event loop from one wait to the next; with a
 * synchronous store (SQLite, the in-process store) its only waits are its tool calls, so a turn that
 * started while an older one waited for a tool ran to its end before the older one could go on, and a
 * booking that waited 4 ms for the airline could wait 20 ms more for the turns that came in meanwhile.
 *
 * Here every store call of a turn is a point where it gives way: while other turns are in flight it waits
 * for the event loop's next check phase (after the I/O that has arrived, such as a tool's answer or a
 * store's reply, has been read) and then the oldest turn waiting goes on, one at a time. A tool's answer
 * to an older turn thus waits for at most one step of a newer turn, never for all of it. A turn alone in
 * the process never waits here.
 */
import { CACHE_IDENTITY, cacheIdentity } from '../store/cache-identity.js';
import type { StateStore } from '../store/types.js';

interface Waiter {
  readonly order: number;
  readonly resume: () => void;
}

export interface TurnSlot {
  /** Resolves when this turn is the oldest one ready to go on (at once when it is alone). */
  step(): Promise<void> | undefined;
  /** The turn has ended (successfully or not): it no longer counts as in flight. Idempotent. */
  end(): void;
}

/** A binary min-heap of waiters by admission order. */
class WaiterHeap {
  private readonly items: Waiter[] = [];

  get size(): number {
    return this.items.length;
  }

  push(waiter: Waiter): void {
    const items = this.items;
    items.push(waiter);
    let i = items.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if ((items[parent] as Waiter).order <= waiter.order) break;
      items[i] = items[parent] as Waiter;
      i = parent;
    }
    items[i] = waiter;
  }

  pop(): Waiter | undefined {
    const items = this.items;
    const top = items[0];
    const last = items.pop();
    if (top === undefined || last === undefined || items.length === 0) return top;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= items.length) break;
      const right = left + 1;
      const child =
        right < items.length && (items[right] as Waiter).order < (items[left] as Waiter).order ? right : left;
      if ((items[child] as Waiter).order >= last.order) break;
      items[i] = items[child] as Waiter;
      i = child;
    }
    items[i] = last;
    return top;
  }
}

export class TurnScheduler {
  private admitted = 0;
  private inFlight = 0;
  private readonly waiting = new WaiterHeap();
  private draining = false;

  /** Turns admitted and not yet ended. */
  get active(): number {
    return this.inFlight;
  }

  /** A new turn, younger than every turn admitted before it. */
  admit(): TurnSlot {
    const order = this.admitted++;
    this.inFlight++;
    let ended = false;
    return {
      step: () => (this.inFlight > 1 ? this.wait(order) : undefined),
      end: () => {
        if (ended) return;
        ended = true;
        this.inFlight--;
      },
    };
  }

  private wait(order: number): Promise<void> {
    return new Promise<void>((resume) => {
      this.waiting.push({ order, resume });
      if (!this.draining) {
        this.draining = true;
        setImmediate(this.drain);
      }
    });
  }

  /** Runs one turn in a new slot, with the store as that turn sees it; the slot ends with the turn. */
  async run<T>(store: StateStore, turn: (store: StateStore) => Promise<T>): Promise<T> {
    const slot = this.admit();
    try {
      return await turn(scheduledStore(store, slot));
    } finally {
      slot.end();
    }
  }

  /** Lets the oldest waiting turn go on; the next one goes after the event loop has read I/O again. */
  private readonly drain = (): void => {
    this.waiting.pop()?.resume();
    if (this.waiting.size > 0) setImmediate(this.drain);
    else this.draining = false;
  };
}

/**
 * The store as one turn sees it: every method first waits for the turn's step. Methods are bound once
 * per name; properties (the adapter's name) pass through, and caches kept per store see the store itself.
 */
export function scheduledStore(store: StateStore, slot: TurnSlot): StateStore {
  const bound = new Map<PropertyKey, unknown>();
  return new Proxy(store, {
    get(target, property, receiver) {
      if (property === CACHE_IDENTITY) return cacheIdentity(target);
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== 'function') return value;
      let method = bound.get(property);
      if (method === undefined) {
        const original = value as (...args: unknown[]) => Promise<unknown>;
        method = (...args: unknown[]) => {
          const step = slot.step();
          return step === undefined
            ? original.apply(target, args)
            : step.then(() => original.apply(target, args));
        };
        bound.set(property, method);
      }
      return method;
    },
  });
}
