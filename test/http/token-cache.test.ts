/**
 * Verified user tokens are cached: a cached token still expires exactly when its `exp` says, a token that
 * differs in any byte is verified afresh, and the cache stays within its bound.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createAuthenticator } from '../../src/http/auth.js';
import { createTokenCache } from '../../src/http/token-cache.js';
import { resolveConfig } from '../../src/server/config.js';

function setup() {
  const tenant = `t${randomBytes(4).toString('hex')}`;
  const key = `key-${randomBytes(12).toString('hex')}`;
  const config = resolveConfig({ apiKeys: { [key]: tenant }, jwtSecret: randomBytes(32).toString('hex') });
  let nowMs = Date.UTC(2026, 0, 1, 12, 0, 0);
  const auth = createAuthenticator(config, () => nowMs);
  return { tenant, auth, advance: (ms: number) => (nowMs += ms) };
}

describe('verified token cache', () => {
  it('a token that was accepted is refused once its exp is reached', async () => {
    const { tenant, auth, advance } = setup();
    const { token } = await auth.mintUserToken(tenant, 'ann', 60);
    const ann = { kind: 'user', tenant_id: tenant, user_id: 'ann' };
    expect(await auth.authenticate(`Bearer ${token}`, '127.0.0.1')).toEqual(ann);
    advance(59_000);
    expect(await auth.authenticate(`Bearer ${token}`, '127.0.0.1')).toEqual(ann);
    advance(1_000);
    await expect(auth.authenticate(`Bearer ${token}`, '127.0.0.1')).rejects.toMatchObject({
      code: 'unauthorized',
      message: 'the bearer token has expired',
    });
  });

  it('a token with a changed signature is refused even after the real one was cached', async () => {
    const { tenant, auth } = setup();
    const { token } = await auth.mintUserToken(tenant, 'ann', 600);
    await auth.authenticate(`Bearer ${token}`, '127.0.0.1');
    const last = token.at(-2) === 'A' ? 'B' : 'A';
    const tampered = `${token.slice(0, -2)}${last}${token.at(-1)}`;
    await expect(auth.authenticate(`Bearer ${tampered}`, '127.0.0.1')).rejects.toMatchObject({
      code: 'unauthorized',
    });
  });

  it('keeps at most its capacity, dropping the least recently used', () => {
    const cache = createTokenCache<string>(2);
    cache.set('a', { value: 'A', exp: 100 });
    cache.set('b', { value: 'B', exp: 100 });
    expect(cache.get('a', 0)).toBe('A');
    cache.set('c', { value: 'C', exp: 100 });
    expect(cache.size).toBe(2);
    expect(cache.get('b', 0)).toBeNull();
    expect(cache.get('a', 0)).toBe('A');
    expect(cache.get('c', 0)).toBe('C');
  });

  it('drops an entry at its exp second, never later', () => {
    const cache = createTokenCache<string>();
    cache.set('t', { value: 'T', exp: 100 });
    expect(cache.get('t', 99_999)).toBe('T');
    expect(cache.get('t', 100_000)).toBeNull();
    expect(cache.size).toBe(0);
  });
});
