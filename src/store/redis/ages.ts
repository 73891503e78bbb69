/**
 * Retention age hints, written with every record retention may delete (see retention.ts for the reader):
 *
 * - in the user's slot, by the record's own script: `rt` task id by updated ms, `ra` action id by updated
 *   ms once it is finished (SUCCESS / FAILED), `rc` checkpoint id by created ms. A hint and its record
 *   change together, so a hint is never missing for a record and never ahead of it;
 * - in the tenant's slot, before that script (one round trip with it): the user in `rtu` / `rau` / `rcu`
 *   with `ZADD LT` (added, or lowered to this score, never raised), and the tenant in `P:tenants`. When the
 *   script then fails or never runs, an entry without a hint is left: the sweeper finds nothing there and
 *   re-scores it. So every hint has its user listed at or below its score.
 */
import type { AgeKind } from './keys.js';
import type { Plan } from './plan.js';
import { registerTenant, tenantKeys, userKeys } from './scope.js';

/** Notes (or moves) the age hint of record `id` of `kind` at `iso` (the record's updated/created time). */
export function noteAge(
  plan: Plan,
  tenantId: string,
  userId: string,
  kind: AgeKind,
  id: string,
  iso: string,
): void {
  const ctx = plan.ctx;
  const ms = Date.parse(iso);
  plan.write('ZADD', userKeys(ctx, tenantId, userId).ages(kind), ms, id);
  const users = tenantKeys(ctx, tenantId).agedUsers(kind);
  plan.before.push(() => ctx.redis.zadd(users, 'LT', ms, userId));
  registerTenant(plan, tenantId);
}
