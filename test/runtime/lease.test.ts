/** The session lease of a run: renewed only once a third of its TTL has passed, and its loss detected. */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { acquireSessionLease } from '../../src/runtime/lease.js';
import { openStore } from '../../src/store/open.js';
import type { StateStore } from '../../src/store/types.js';
import { freshScope } from './setup.js';

/** The store, counting its acquireLease calls. */
async function countingStore(): Promise<{ store: StateStore; acquired: () => number }> {
  const store = await openStore('memory:');
  let calls = 0;
  const counted = new Proxy(store, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (property !== 'acquireLease' || typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        calls++;
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { store: counted, acquired: () => calls };
}

describe('session lease', () => {
  it('does not ask the store again while less than a third of its TTL has passed', async () => {
    const { store, acquired } = await countingStore();
    const lease = await acquireSessionLease(store, freshScope(), 'sess_a', 'owner-1', 10_000);
    for (let i = 0; i < 5; i++) await lease.renew();
    expect(acquired()).toBe(1);
    await lease.release();
  });

  it('extends it once a third of the TTL has passed', async () => {
    const { store, acquired } = await countingStore();
    const scope = freshScope();
    const lease = await acquireSessionLease(store, scope, 'sess_b', 'owner-1', 1_500);
    await sleep(550);
    await lease.renew();
    expect(acquired()).toBe(2);
    await sleep(1_100); // past the first expiry (1.5 s), within the renewed one (2.05 s)
    expect(await store.acquireLease(scope, 'session:sess_b', 'owner-2', 1_500)).toBeNull();
    await lease.release();
  });

  it('reports a lease lost to another owner after it ran out', async () => {
    const { store } = await countingStore();
    const scope = freshScope();
    const lease = await acquireSessionLease(store, scope, 'sess_c', 'owner-1', 300);
    await sleep(350);
    expect(await store.acquireLease(scope, 'session:sess_c', 'owner-2', 10_000)).not.toBeNull();
    await expect(lease.renew()).rejects.toMatchObject({ code: 'conflict' });
    await lease.release();
  });
});
