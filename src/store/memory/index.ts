/** The `memory:` adapter: in-process, for tests and prototypes. */
import type { StateStore, StoreOptions } from '../types.js';
import { MemoryStore } from './store.js';

export { MAX_SWEEP_LIMIT, MemoryStore } from './store.js';

/** Opens an in-process store. `options` is read once and never mutated. */
export function createMemoryStore(options: StoreOptions = {}): StateStore {
  return new MemoryStore(options);
}
