/** Leases (compare-and-swap claims with an expiry) and request keys (HTTP Idempotency-Key). */
import { isoAt } from '../../core/clock.js';
import { AgentStateError } from '../../core/errors.js';
import type { Lease, RequestKeyClaim, Scope, StoredResponse } from '../types.js';
import { type Ctx, copy, key } from './db.js';
import { ADAPTER, checkScope, fail, json, name, positiveInt, record } from './validate.js';

export function acquireLease(
  c: Ctx,
  scope: Scope,
  leaseName: string,
  owner: string,
  ttl_ms: number,
): Lease | null {
  checkScope(scope);
  name(leaseName, 'lease name');
  name(owner, 'owner');
  positiveInt(ttl_ms, 'ttl_ms');
  const k = key(scope.tenant_id, scope.user_id, leaseName);
  const held = c.t.leases.get(k);
  if (held !== undefined && held.owner !== owner && held.expires_ms > c.now) return null;
  const expires_ms = c.now + ttl_ms;
  c.tx.set(c.t.leases, k, { owner, expires_ms });
  return { name: leaseName, owner, expires_at: isoAt(expires_ms) };
}

export function releaseLease(c: Ctx, scope: Scope, leaseName: string, owner: string): boolean {
  checkScope(scope);
  name(leaseName, 'lease name');
  name(owner, 'owner');
  const k = key(scope.tenant_id, scope.user_id, leaseName);
  const held = c.t.leases.get(k);
  if (held === undefined || held.owner !== owner || held.expires_ms <= c.now) return false;
  return c.tx.delete(c.t.leases, k);
}

export function claimRequestKey(
  c: Ctx,
  scope: Scope,
  requestKey: string,
  request_hash: string,
  ttl_seconds: number,
  in_progress_ttl_seconds: number = ttl_seconds,
): RequestKeyClaim {
  checkScope(scope);
  name(requestKey, 'request key');
  name(request_hash, 'request_hash');
  positiveInt(ttl_seconds, 'ttl_seconds');
  positiveInt(in_progress_ttl_seconds, 'in_progress_ttl_seconds');
  const k = key(scope.tenant_id, scope.user_id, requestKey);
  const held = c.t.requestKeys.get(k);
  if (held === undefined || held.expires_ms <= c.now) {
    c.tx.set(c.t.requestKeys, k, {
      request_hash,
      ttl_seconds,
      expires_ms: c.now + in_progress_ttl_seconds * 1000,
      response: null,
    });
    return { state: 'new' };
  }
  if (held.request_hash !== request_hash) return { state: 'mismatch' };
  if (held.response === null) return { state: 'in_progress' };
  return { state: 'done', response: copy(held.response) };
}

export function completeRequestKey(c: Ctx, scope: Scope, requestKey: string, response: StoredResponse): void {
  checkScope(scope);
  name(requestKey, 'request key');
  record(response, 'response');
  const status = response.status;
  if (typeof status !== 'number' || !Number.isInteger(status) || status < 100 || status > 599) {
    fail(`response.status must be an HTTP status from 100 to 599, got ${String(status)}`);
  }
  const body = json(response.body, 'response.body');
  const k = key(scope.tenant_id, scope.user_id, requestKey);
  const held = c.t.requestKeys.get(k);
  if (held === undefined || held.expires_ms <= c.now) {
    throw new AgentStateError(
      'not_found',
      `[${ADAPTER}] request key ${JSON.stringify(requestKey)} not found`,
    );
  }
  c.tx.set(c.t.requestKeys, k, {
    ...held,
    expires_ms: c.now + held.ttl_seconds * 1000,
    response: { status, body },
  });
}

export function releaseRequestKey(c: Ctx, scope: Scope, requestKey: string): void {
  checkScope(scope);
  name(requestKey, 'request key');
  c.tx.delete(c.t.requestKeys, key(scope.tenant_id, scope.user_id, requestKey));
}

/** Drops expired leases and request keys. */
export function sweepClaims(c: Ctx): void {
  for (const [k, lease] of [...c.t.leases]) if (lease.expires_ms <= c.now) c.tx.delete(c.t.leases, k);
  for (const [k, held] of [...c.t.requestKeys]) if (held.expires_ms <= c.now) c.tx.delete(c.t.requestKeys, k);
}
