/** Leases and request idempotency keys: small hashes per user, taken with a revision check. */
import { isoAt } from '../../core/clock.js';
import { AgentStateError, invalidRequest } from '../../core/errors.js';
import type { JsonValue } from '../../core/json.js';
import type { Lease, RequestKeyClaim, Scope, StoredResponse } from '../types.js';
import { type Ctx, type Plan, runPlan } from './plan.js';
import { userKeys } from './scope.js';
import * as v from './validate.js';

const MAX_LEASE_MS = 24 * 3600 * 1000;

export function acquireLease(ctx: Ctx, scope: Scope, name: string, owner: string, ttlMs: number) {
  v.checkScope(scope);
  v.text(name, 'name');
  v.text(owner, 'owner');
  v.integer(ttlMs, 'ttl_ms', 1, MAX_LEASE_MS);
  const key = userKeys(ctx, scope.tenant_id, scope.user_id).lease(name);
  return runPlan(ctx, async (plan): Promise<Lease | null> => {
    const row = await plan.read(key);
    const now = ctx.clock.now();
    if (row !== null) {
      const held = JSON.parse(row.json) as Lease;
      if (held.owner !== owner && Date.parse(held.expires_at) > now) return null;
    }
    const lease: Lease = { name, owner, expires_at: isoAt(now + ttlMs) };
    plan.put(key, JSON.stringify(lease));
    plan.write('PEXPIRE', key, ttlMs + Math.min(ttlMs, 10_000));
    return lease;
  });
}

export function releaseLease(ctx: Ctx, scope: Scope, name: string, owner: string): Promise<boolean> {
  v.checkScope(scope);
  v.text(name, 'name');
  v.text(owner, 'owner');
  return runPlan(ctx, (plan) => prepareReleaseLease(plan, scope, name, owner));
}

/** Frees the lease in `plan` when `owner` holds it (a commit's release is part of the commit's plan). */
export async function prepareReleaseLease(plan: Plan, scope: Scope, name: string, owner: string) {
  const key = userKeys(plan.ctx, scope.tenant_id, scope.user_id).lease(name);
  const row = await plan.read(key);
  if (row === null || (JSON.parse(row.json) as Lease).owner !== owner) return false;
  plan.remove(key);
  return true;
}

interface RequestRecord {
  readonly hash: string;
  readonly expires_ms: number;
  readonly ttl_ms: number;
  readonly response: StoredResponse | null;
}

export function claimRequestKey(
  ctx: Ctx,
  scope: Scope,
  key: string,
  hash: string,
  ttlSeconds: number,
  inProgressTtlSeconds: number = ttlSeconds,
) {
  v.checkScope(scope);
  v.text(key, 'key', 512);
  v.text(hash, 'request_hash', 512);
  v.ttlSeconds(ttlSeconds, 'ttl_seconds');
  v.ttlSeconds(inProgressTtlSeconds, 'in_progress_ttl_seconds');
  const redisKey = userKeys(ctx, scope.tenant_id, scope.user_id).requestKey(key);
  return runPlan(ctx, async (plan): Promise<RequestKeyClaim> => {
    const row = await plan.read(redisKey);
    const now = ctx.clock.now();
    const held = row === null ? null : (JSON.parse(row.json) as RequestRecord);
    if (held !== null && held.expires_ms > now) {
      if (held.hash !== hash) return { state: 'mismatch' };
      return held.response === null ? { state: 'in_progress' } : { state: 'done', response: held.response };
    }
    const ttlMs = ttlSeconds * 1000;
    const inProgressMs = inProgressTtlSeconds * 1000;
    const record: RequestRecord = { hash, expires_ms: now + inProgressMs, ttl_ms: ttlMs, response: null };
    plan.put(redisKey, JSON.stringify(record));
    plan.write('PEXPIRE', redisKey, inProgressMs + 10_000);
    return { state: 'new' };
  });
}

export function completeRequestKey(
  ctx: Ctx,
  scope: Scope,
  key: string,
  response: StoredResponse,
): Promise<void> {
  v.checkScope(scope);
  v.text(key, 'key', 512);
  if (typeof response !== 'object' || response === null)
    throw invalidRequest('[redis] response must be an object');
  v.integer(response.status, 'response.status', 100, 599);
  v.jsonValue(response.body, 'response.body');
  const redisKey = userKeys(ctx, scope.tenant_id, scope.user_id).requestKey(key);
  return runPlan(ctx, async (plan) => {
    const row = await plan.read(redisKey);
    const now = ctx.clock.now();
    const held = row === null ? null : (JSON.parse(row.json) as RequestRecord);
    if (held === null || held.expires_ms <= now) {
      throw new AgentStateError('not_found', `[redis] request key ${JSON.stringify(key)} is not claimed`);
    }
    const body: JsonValue = structuredClone(response.body);
    const record: RequestRecord = {
      ...held,
      expires_ms: now + held.ttl_ms,
      response: { status: response.status, body },
    };
    plan.put(redisKey, JSON.stringify(record));
    plan.write('PEXPIRE', redisKey, held.ttl_ms + 10_000);
  });
}

export async function releaseRequestKey(ctx: Ctx, scope: Scope, key: string): Promise<void> {
  v.checkScope(scope);
  v.text(key, 'key', 512);
  await ctx.redis.del(userKeys(ctx, scope.tenant_id, scope.user_id).requestKey(key));
}
