/** The `memory:` store: the store core over the in-process driver, for tests and prototypes. */
import { CoreStore, MAX_SWEEP_LIMIT } from '../core/create-store.js';
import type { StateStore, StoreOptions } from '../types.js';
import { MemoryDriver } from './driver.js';

export { MAX_SWEEP_LIMIT, MemoryDriver };

export class MemoryStore extends CoreStore {
  private readonly rows: MemoryDriver;

  constructor(options: StoreOptions = {}) {
    const driver = new MemoryDriver();
    super(driver, options);
    this.rows = driver;
  }

  /**
   * What the Maps hold right now for one tenant, expired or not: sessions and messages. For harnesses that
   * count what a sweep left (not part of the StateStore contract).
   */
  rawCounts(tenant_id: string): { sessions: number; messages: number } {
    return this.rows.rawCounts(tenant_id);
  }
}

/** The in-process driver alone: for a driver of your own that keeps its rows in another driver's. */
export function createMemoryDriver(): MemoryDriver {
  return new MemoryDriver();
}

/** Opens an in-process store. `options` is read once and never mutated. */
export function createMemoryStore(options: StoreOptions = {}): StateStore {
  return new MemoryStore(options);
}
