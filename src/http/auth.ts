/**
 * Who is asking. A tenant API key acts for its whole tenant; a user token (HS256 JWT minted by
 * `POST /v1/tokens`) acts for one user of one tenant; without configured keys, requests on loopback act as
 * tenant `default`. The tenant and user always come from the credential, never from the body or query.
 *
 * Decisions: a `user_id` in a body or query that differs from a user token's user answers 400
 * `invalid_request` (the request contradicts its own credential; nothing about other users is revealed).
 * Another user's memory path answers 404, like every record of someone else. Bad, expired or forged
 * tokens answer 401 `unauthorized`, as does a user token asking to mint tokens.
 */
import { createHash, timingSafeEqual, webcrypto } from 'node:crypto';
import { errors as joseErrors, jwtVerify, SignJWT } from 'jose';
import { AgentStateError, invalidRequest } from '../core/errors.js';
import { DEFAULT_TENANT, DEFAULT_USER, type HttpConfig, isLoopback, PRINCIPAL_ID } from '../server/config.js';
import type { ReadScope, Scope } from '../store/types.js';
import { createTokenCache } from './token-cache.js';

export type Principal =
  | { readonly kind: 'tenant'; readonly tenant_id: string; readonly user_id: null }
  | { readonly kind: 'user'; readonly tenant_id: string; readonly user_id: string }
  | { readonly kind: 'anonymous'; readonly tenant_id: string; readonly user_id: null };

const ISSUER = 'agentstate';
const AUDIENCE = 'agentstate';

function unauthorized(message: string): AgentStateError {
  return new AgentStateError('unauthorized', message);
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

function importHmacKey(secret: string): Promise<webcrypto.CryptoKey> {
  const bytes = new TextEncoder().encode(secret);
  const key = webcrypto.subtle.importKey('raw', bytes, { name: 'HMAC', hash: 'SHA-256' }, false, [
    'sign',
    'verify',
  ]);
  // A failure surfaces where the key is awaited (a 401 or a failed mint), never as an unhandled rejection.
  key.catch(() => undefined);
  return key;
}

export interface Authenticator {
  /** Resolves the principal of a request from its Authorization header and the local address it came to. */
  authenticate(authorization: string | undefined, localAddress: string | undefined): Promise<Principal>;
  mintUserToken(
    tenant_id: string,
    user_id: string,
    ttl_seconds: number,
  ): Promise<{ token: string; expires_at: string }>;
}

export function createAuthenticator(config: HttpConfig, now: () => number = Date.now): Authenticator {
  const keyDigests = [...config.apiKeys].map(([key, tenant]) => ({ digest: digest(key), tenant }));
  // The HMAC key is imported once: given raw bytes, jose would import a WebCrypto key on every call.
  const secret = config.jwtSecret === null ? null : importHmacKey(config.jwtSecret);
  const anonymous = config.apiKeys.size === 0;
  const verified = createTokenCache<Principal>();

  function tenantOfKey(token: string): string | null {
    const given = digest(token);
    let found: string | null = null;
    for (const entry of keyDigests) if (timingSafeEqual(entry.digest, given)) found = entry.tenant;
    return found;
  }

  async function verifyUserToken(token: string): Promise<Principal> {
    if (secret === null) throw unauthorized('the bearer token is not valid: this server has no token secret');
    const cached = verified.get(token, now());
    if (cached !== null) return cached;
    try {
      const { payload } = await jwtVerify(token, await secret, {
        algorithms: ['HS256'],
        issuer: ISSUER,
        audience: AUDIENCE,
        currentDate: new Date(now()),
        requiredClaims: ['sub', 'tid', 'exp'],
      });
      const tenant = payload.tid;
      const user = payload.sub;
      if (typeof tenant !== 'string' || typeof user !== 'string' || !PRINCIPAL_ID.test(tenant)) {
        throw unauthorized('the bearer token is not valid');
      }
      if (!anonymous && !keyDigests.some((entry) => entry.tenant === tenant)) {
        throw unauthorized('the bearer token names a tenant that has no key any more');
      }
      const principal: Principal = { kind: 'user', tenant_id: tenant, user_id: user };
      if (typeof payload.exp === 'number') verified.set(token, { value: principal, exp: payload.exp });
      return principal;
    } catch (error) {
      if (error instanceof AgentStateError) throw error;
      if (error instanceof joseErrors.JWTExpired) throw unauthorized('the bearer token has expired');
      throw unauthorized('the bearer token is not valid');
    }
  }

  return {
    async authenticate(authorization, localAddress) {
      if (authorization === undefined || authorization === '') {
        if (!anonymous) throw unauthorized('missing Authorization: Bearer <token>');
        // Defence in depth: even if the server was bound elsewhere, only loopback connections are anonymous.
        if (localAddress !== undefined && !isLoopback(localAddress)) {
          throw unauthorized('unauthenticated requests are accepted on loopback only');
        }
        return { kind: 'anonymous', tenant_id: DEFAULT_TENANT, user_id: null };
      }
      // The scheme is case-insensitive (RFC 9110 11.1): "bearer" is the same scheme.
      const match = /^Bearer ([\x21-\x7e]{1,4096})$/i.exec(authorization);
      if (match === null) throw unauthorized('the Authorization header must be "Bearer <token>"');
      const token = match[1] as string;
      // A user token verified before answers from the cache without hashing it against the keys: it was
      // no key when verified, and the keys are fixed for the life of the process.
      const known = verified.get(token, now());
      if (known !== null) return known;
      const tenant = tenantOfKey(token);
      if (tenant !== null) return { kind: 'tenant', tenant_id: tenant, user_id: null };
      return verifyUserToken(token);
    },

    async mintUserToken(tenant_id, user_id, ttl_seconds) {
      if (secret === null) throw invalidRequest('this server has no token secret (AGENTSTATE_JWT_SECRET)');
      const iat = Math.floor(now() / 1000);
      const token = await new SignJWT({ tid: tenant_id })
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setSubject(user_id)
        .setIssuer(ISSUER)
        .setAudience(AUDIENCE)
        .setIssuedAt(iat)
        .setExpirationTime(iat + ttl_seconds)
        .sign(await secret);
      return { token, expires_at: new Date((iat + ttl_seconds) * 1000).toISOString() };
    },
  };
}

function mismatch(field: string): AgentStateError {
  return invalidRequest(
    `${field} differs from the user of the bearer token; a user token acts only as its own user`,
    {
      field,
    },
  );
}

/**
 * The read scope of a request. A user token reads its own records only; a tenant key (or loopback mode)
 * reads the whole tenant, or one user's records when `user_id` is given in the query.
 */
export function readScopeOf(principal: Principal, queryUserId?: string): ReadScope {
  if (principal.kind === 'user') {
    if (queryUserId !== undefined && queryUserId !== principal.user_id) throw mismatch('user_id');
    return { tenant_id: principal.tenant_id, user_id: principal.user_id };
  }
  return queryUserId === undefined
    ? { tenant_id: principal.tenant_id }
    : { tenant_id: principal.tenant_id, user_id: queryUserId };
}

/**
 * The write scope for a new record. A user token writes as itself; a tenant key must name the user in the
 * body; loopback mode uses the body's user or `default`.
 */
export function writeScopeOf(principal: Principal, bodyUserId: string | undefined): Scope {
  switch (principal.kind) {
    case 'user':
      if (bodyUserId !== undefined && bodyUserId !== principal.user_id) throw mismatch('user_id');
      return { tenant_id: principal.tenant_id, user_id: principal.user_id };
    case 'tenant':
      if (bodyUserId === undefined)
        throw invalidRequest('user_id: required when acting with a tenant API key');
      return { tenant_id: principal.tenant_id, user_id: bodyUserId };
    case 'anonymous':
      return { tenant_id: principal.tenant_id, user_id: bodyUserId ?? DEFAULT_USER };
  }
}

/** A user's own space (memory): a user token reaches only itself; another user's path is simply not found. */
export function userScopeOf(principal: Principal, pathUserId: string): Scope | null {
  if (principal.kind === 'user' && principal.user_id !== pathUserId) return null;
  return { tenant_id: principal.tenant_id, user_id: pathUserId };
}

/** The scope Idempotency-Keys live in: the credential's tenant and user (`*` for a tenant key). */
export function requestKeyScopeOf(principal: Principal): Scope {
  return { tenant_id: principal.tenant_id, user_id: principal.user_id ?? '*' };
}
