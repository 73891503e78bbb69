/**
 * The store that caches kept per store are keyed by. A view of a store made for one call (a turn's
 * scheduled view, turn-scheduler.ts) answers `CACHE_IDENTITY` with the store it wraps, so what a cache
 * learned in one turn is still there in the next.
 */
import type { StateStore } from './types.js';

export const CACHE_IDENTITY: unique symbol = Symbol('agentstate.cacheIdentity');

export function cacheIdentity(store: StateStore): object {
  const inner: unknown = (store as unknown as { [CACHE_IDENTITY]?: unknown })[CACHE_IDENTITY];
  return typeof inner === 'object' && inner !== null ? inner : store;
}
