/**
 * The page's only way to the server: the public API (`/v1/...`) with the token the user entered, kept in
 * this tab's sessionStorage (never localStorage, never a cookie). No token means the local, keyless mode.
 */
import { AgentStateHttpError, createClient } from '../../client/index.js';

const TOKEN_KEY = 'agentstate.inspector.token';

/** @returns {string | null} the token, '' for "no token (local server)", null when not chosen yet */
export function storedToken() {
  return sessionStorage.getItem(TOKEN_KEY);
}

/** @param {string | null} token */
export function storeToken(token) {
  if (token === null) sessionStorage.removeItem(TOKEN_KEY);
  else sessionStorage.setItem(TOKEN_KEY, token.trim());
}

/** Who the token says it is: a user token is a JWT whose `sub` is the user; anything else is a tenant key. */
export function describeToken(token) {
  if (!token) return { kind: 'local', label: 'no token (local server)' };
  const parts = token.split('.');
  if (parts.length === 3) {
    try {
      const payload = JSON.parse(atob(parts[1].replace(/-/g, '+').replace(/_/g, '/')));
      if (typeof payload.sub === 'string') {
        return { kind: 'user', user: payload.sub, label: `user ${payload.sub} (tenant ${payload.tid})` };
      }
    } catch {
      // not a JWT: a tenant key
    }
  }
  return { kind: 'tenant', label: 'tenant key' };
}

/**
 * The typed client of the API (agentstate/client), on this page's origin with the token above. Every POST
 * carries a fresh Idempotency-Key (a turn or resume sent again after a broken connection runs once); a rate
 * limit or a restarting server is waited out a little. Errors are `AgentStateHttpError`s: `status` (0 when
 * the server did not answer), `code` and `message`.
 */
export const client = createClient({
  baseUrl: '',
  token: () => storedToken(),
  retries: { retries: 2, maxDelayMs: 5000 },
});

export { AgentStateHttpError };

/**
 * Every item of a paged list, up to `max`.
 * @param {(page: {limit: number, cursor?: string}) => Promise<{items: unknown[], next_cursor: string | null}>} list
 */
export async function all(list, max = 500) {
  const items = [];
  let cursor;
  do {
    const page = await list({ limit: Math.min(max, 500), ...(cursor ? { cursor } : {}) });
    items.push(...page.items);
    cursor = page.next_cursor;
  } while (cursor && items.length < max);
  return items;
}
