/**
 * The sweeper. Each tenant keeps expiry hints (created member by expires ms, written at creation); a hint
 * that is due is checked against the session itself: expired (or already reclaimed by Redis) sessions are
 * removed with their messages and index entries; a renewed one gets its hint moved to its new expiry.
 * Runs whose newest event expired go the same way (run-events.ts), up to `limit` runs besides the
 * sessions; they are not counted.
 */
import { memberId, tenantsKey, unescapeKeyPart } from './keys.js';
import type { Ctx } from './plan.js';
import { sweepRunEvents } from './run-events.js';
import { tenantKeys, userKeys } from './scope.js';
import { pruneCounts, uncount } from './stats.js';

async function sweepTenant(ctx: Ctx, tenant: string, now: number, limit: number): Promise<number> {
  const keys = tenantKeys(ctx, tenant);
  const members = await ctx.redis.zrangebyscore(keys.sessionExpiry(), '-inf', now, 'LIMIT', 0, limit);
  if (members.length === 0) return 0;
  const ids = members.map(memberId);
  const users = await ctx.redis.hmget(keys.owners(), ...ids);
  const removeHint = (member: string, id: string) =>
    Promise.all([
      ctx.redis.zrem(keys.sessionExpiry(), member),
      ctx.redis.zrem(keys.sessions(), member),
      ctx.redis.hdel(keys.owners(), id),
    ]);
  const swept = await Promise.all(
    members.map(async (member, i) => {
      const id = ids[i] as string;
      const user = users[i];
      if (user === null || user === undefined) {
        // Deleted already: only a stale hint remained.
        await Promise.all([
          ctx.redis.zrem(keys.sessionExpiry(), member),
          ctx.redis.zrem(keys.sessions(), member),
        ]);
        return 0;
      }
      const user_keys = userKeys(ctx, tenant, user);
      const reply = Number(
        await ctx.scripts.sweepSession(
          3,
          user_keys.session(id),
          user_keys.messages(id),
          user_keys.sessions(),
          now,
          member,
        ),
      );
      if (reply === -1) {
        await Promise.all([removeHint(member, id), uncount(ctx, tenant, user, id)]);
        return 1;
      }
      await ctx.redis.zadd(keys.sessionExpiry(), reply, member);
      return 0;
    }),
  );
  return swept.reduce<number>((sum, n) => sum + n, 0);
}

export async function sweepExpired(ctx: Ctx, now: number, limit: number): Promise<number> {
  const tenants = await ctx.redis.smembers(tenantsKey(ctx.prefix));
  let count = 0;
  let runs = 0;
  for (const escaped of tenants) {
    if (count >= limit && runs >= limit) break;
    const tenant = unescapeKeyPart(escaped);
    if (count < limit) count += await sweepTenant(ctx, tenant, now, limit - count);
    if (runs < limit) runs += await sweepRunEvents(ctx, tenant, now, limit - runs);
  }
  await pruneCounts(ctx, now);
  return count;
}
