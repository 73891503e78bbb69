/** From a scope to keys: a user's keys directly, or through the tenant's id -> user index for a tenant key. */
import { invalidRequest } from '../../core/errors.js';
import { type IdKind, isId } from '../../core/ids.js';
import type { ReadScope, Scope } from '../types.js';
import { escapeKeyPart, TenantKeys, tenantsKey, UserKeys } from './keys.js';
import type { Ctx, Plan } from './plan.js';
import { checkReadScope } from './validate.js';

export function userKeys(ctx: Ctx, tenantId: string, userId: string): UserKeys {
  return new UserKeys(ctx.prefix, tenantId, userId);
}

export function tenantKeys(ctx: Ctx, tenantId: string): TenantKeys {
  return new TenantKeys(ctx.prefix, tenantId);
}

/** The owner of `id` in scope: the scope's user, or the one the tenant index names. Null when unknown. */
export async function resolveUser(ctx: Ctx, scope: ReadScope, id: string): Promise<string | null> {
  if (scope.user_id !== undefined) return scope.user_id;
  return ctx.redis.hget(tenantKeys(ctx, scope.tenant_id).owners(), id);
}

/** Runs `fn` in the scope of the owner of `id`; `none()` when the id is not one of the scope's. */
export async function inOwnerScope<T>(
  ctx: Ctx,
  scope: ReadScope,
  id: string,
  kind: IdKind,
  fn: (s: Scope) => Promise<T>,
  none: () => T,
): Promise<T> {
  checkReadScope(scope);
  if (typeof id !== 'string' || !isId(id, kind))
    throw invalidRequest(`[redis] ${JSON.stringify(id)} is not a ${kind} id`);
  const user = await resolveUser(ctx, scope, id);
  return user === null ? none() : fn({ tenant_id: scope.tenant_id, user_id: user });
}

/** The owners of many ids of one tenant, in one call. */
export async function resolveUsers(
  ctx: Ctx,
  scope: ReadScope,
  ids: readonly string[],
): Promise<(string | null)[]> {
  if (scope.user_id !== undefined || ids.length === 0) return ids.map(() => scope.user_id ?? null);
  return ctx.redis.hmget(tenantKeys(ctx, scope.tenant_id).owners(), ...ids);
}

/**
 * Registers a new record in the tenant-level index before the plan's script writes it (another slot);
 * undone when the script refuses. `lists` are (tenant index key, member) pairs.
 */
export function indexInTenant(
  plan: Plan,
  tenantId: string,
  userId: string,
  id: string,
  lists: readonly (readonly [string, string])[],
): void {
  const ctx = plan.ctx;
  const owners = tenantKeys(ctx, tenantId).owners();
  plan.before.push(async () => {
    await Promise.all([
      ctx.redis.hset(owners, id, userId),
      ...lists.map(([key, m]) => ctx.redis.zadd(key, 0, m)),
    ]);
  });
  plan.undo.push(async () => {
    await Promise.all([ctx.redis.hdel(owners, id), ...lists.map(([key, m]) => ctx.redis.zrem(key, m))]);
  });
}

export function registerTenant(plan: Plan, tenantId: string): void {
  const ctx = plan.ctx;
  plan.before.push(() => ctx.redis.sadd(tenantsKey(ctx.prefix), escapeKeyPart(tenantId)));
}

/** Native TTL for a record logically expiring at `expiresMs`: what remains, plus a grace of up to 10 s. */
export function nativeTtlMs(expiresMs: number, nowMs: number, ttlSeconds: number): number {
  return Math.max(1, expiresMs - nowMs) + Math.min(ttlSeconds * 1000, 10_000);
}
