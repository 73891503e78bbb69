/**
 * Verified user tokens, so a token is checked (signature, issuer, audience, claims) once rather than on
 * every request. Keyed by the whole token string (signature included), so only the very token that was
 * verified hits. An entry is used only while the token is unexpired by the server's clock and is dropped
 * as soon as it is not; at most `capacity` entries, the least recently used going first.
 */
import { RecentMap } from '../core/recent-map.js';

export interface CachedToken<T> {
  readonly value: T;
  /** The token's `exp` claim, seconds since the epoch. */
  readonly exp: number;
}

export interface TokenCache<T> {
  /** The cached value while `nowMs` is before the token's expiry, else null (and the entry is dropped). */
  get(token: string, nowMs: number): T | null;
  set(token: string, entry: CachedToken<T>): void;
  readonly size: number;
}

export const DEFAULT_TOKEN_CACHE_SIZE = 10_000;

export function createTokenCache<T>(capacity: number = DEFAULT_TOKEN_CACHE_SIZE): TokenCache<T> {
  const entries = new RecentMap<string, CachedToken<T>>(Math.max(0, capacity));
  return {
    get(token, nowMs) {
      const entry = entries.use(token);
      if (entry === undefined) return null;
      // Same rule as the verifier: expired once the current whole second reaches `exp`.
      if (Math.floor(nowMs / 1000) < entry.exp) return entry.value;
      entries.delete(token);
      return null;
    },
    set(token, entry) {
      if (capacity > 0) entries.set(token, entry);
    },
    get size() {
      return entries.size;
    },
  };
}
