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
 * Registers a new record in the tenant-level index: its id is claimed for the user before the plan's
 * script runs (a `conflict` when another user of the tenant holds it, see Plan.claim), and its entries in
 * the tenant's lists are written before the script (another slot), undone when the script refuses. The
 * claim of a caller-chosen id is not undone: the retry claims it again, and a concurrent create of the same
 * id by the same user may already rely on it (readers skip an owner entry whose record does not exist); the
 * claim of an id the store generated (`generated`: nobody else can know it, and a retry draws a new one) is
 * released. `lists` are (tenant index key, member) pairs.
 */
export function indexInTenant(
  plan: Plan,
  tenantId: string,
  userId: string,
  id: string,
  lists: readonly (readonly [string, string])[],
  kind: string,
  generated: boolean,
): void {
  const ctx = plan.ctx;
  const owners = tenantKeys(ctx, tenantId).owners();
  plan.claim(owners, userId, id, kind);
  if (generated) plan.undo.push(() => ctx.scripts.releaseOwners(1, owners, userId, id));
  if (lists.length === 0) return;
  plan.before.push(async () => {
    await Promise.all(lists.map(([key, m]) => ctx.redis.zadd(key, 0, m)));
  });
  plan.undo.push(async () => {
    await Promise.all(lists.map(([key, m]) => ctx.redis.zrem(key, m)));
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
