/**
 * The page's only way to the server: the public API (`/v1/...`) with the token the user entered, kept in
 * this tab's sessionStorage (never localStorage, never a cookie). No token means the local, keyless mode.
 */
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

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/** Query string from an object, leaving out empty values. */
export function query(params) {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== '') search.set(key, String(value));
  }
  const text = search.toString();
  return text === '' ? '' : `?${text}`;
}

/**
 * One API call. Throws ApiError with the API's `{error: {code, message}}`.
 * @param {string} path
 * @param {{method?: string, body?: unknown, headers?: Record<string, string>}} [options]
 */
export async function api(path, options = {}) {
  const headers = { accept: 'application/json', ...(options.headers ?? {}) };
  const token = storedToken();
  if (token) headers.authorization = `Bearer ${token}`;
  const init = { method: options.method ?? 'GET', headers };
  if (options.body !== undefined) {
    headers['content-type'] = 'application/json';
    init.body = JSON.stringify(options.body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (error) {
    throw new ApiError(0, 'network', `the server did not answer (${error.message})`);
  }
  const text = await response.text();
  let data = null;
  if (text !== '') {
    try {
      data = JSON.parse(text);
    } catch {
      data = null;
    }
  }
  if (!response.ok) {
    const error = data?.error ?? {};
    throw new ApiError(response.status, error.code ?? `http_${response.status}`, error.message ?? text);
  }
  return data;
}

/** Every item of a paged list, up to `max`. */
export async function all(path, params, max = 500) {
  const items = [];
  let cursor;
  do {
    const page = await api(`${path}${query({ ...params, limit: Math.min(max, 500), cursor })}`);
    items.push(...page.items);
    cursor = page.next_cursor;
  } while (cursor && items.length < max);
  return items;
}

/** A fresh Idempotency-Key, so a POST retried by the user after a broken connection runs once. */
export function idempotencyKey() {
  return `inspector-${crypto.randomUUID()}`;
}
