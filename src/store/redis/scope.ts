/** From a scope to keys, and a new record's entries in its tenant's index (owner hash, tenant-wide lists). */
import { escapeKeyPart, TenantKeys, tenantsKey, UserKeys } from './keys.js';
import type { Ctx, Plan } from './plan.js';

export function userKeys(ctx: Ctx, tenantId: string, userId: string): UserKeys {
  return new UserKeys(ctx.prefix, tenantId, userId);
}

export function tenantKeys(ctx: Ctx, tenantId: string): TenantKeys {
  return new TenantKeys(ctx.prefix, tenantId);
}

/**
 * Registers a new record (at `recordKey`) in the tenant-level index: its id is claimed for the user before
 * the plan's script runs (a `conflict` when another user of the tenant holds it, see Plan.claim), and its
 * entries in the tenant's lists are written before the script (another slot), undone when the script
 * refuses. A refused plan releases its claim only while the record does not exist: a concurrent create of
 * the same id by the same user that committed keeps it (readers skip an owner entry whose record does not
 * exist). `lists` are (tenant index key, member) pairs.
 */
export function indexInTenant(
  plan: Plan,
  tenantId: string,
  userId: string,
  id: string,
  recordKey: string,
  lists: readonly (readonly [string, string])[],
  kind: string,
): void {
  const ctx = plan.ctx;
  const owners = tenantKeys(ctx, tenantId).owners();
  plan.claim(owners, userId, id, kind);
  plan.undo.push(async () => {
    if ((await ctx.redis.exists(recordKey)) === 0) await ctx.scripts.releaseOwners(1, owners, userId, id);
  });
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
