/**
 * Action counts by status for the UNKNOWN-actions gauge, without a scan: one sorted set per counted status,
 * `P:{stats}:ast:PENDING` and `P:{stats}:ast:UNKNOWN`, holding `<tenant>:<user>:<action id>` (escaped)
 * scored by the action's created ms; the count is a ZCARD. (There is no cross-tenant index of actions by
 * status otherwise: each user's `ast:<status>` index lives in that user's slot.)
 *
 * These sets carry their own hash tag (one slot for all of them, not the user's), so the user's atomic
 * script cannot write them: they are maintained NEXT TO the records, not with them. Every action write
 * (begin, complete, mark unknown, resolve, a retry's attempt, each also inside a turn) sets the action's
 * entry right after its script committed (plan.after), in one MULTI: counted under its status when that
 * is PENDING or UNKNOWN, under no other. Retention removes the entries of the actions it deleted right
 * after its script (retention.ts). Best effort, so the sets can drift from the records:
 * - a crash or lost connection between the script and the MULTI leaves an action begun but not counted
 *   (until its next write), or an action counted under a status it left or after it was deleted;
 * - two writers of one action finishing in the other order can leave it counted under its old status.
 * An action counted too much heals by itself: every actionStats() call checks up to HEAL_SAMPLE random
 * entries of each set against the user's own status index (written by the record's script, so it is the
 * truth) and drops those whose action no longer exists or has another status. Statuses only move forward
 * (PENDING -> UNKNOWN -> SUCCESS | FAILED), so an entry found stale can never become right again. An action
 * not counted is counted again at its next write; actions written before these sets existed are counted
 * from their next write on. The gauge is a monitor, never a source of truth.
 */
import type { Action, ActionStatus } from '../../core/model.js';
import type { ActionStats } from '../types.js';
import { escapeKeyPart, indexMember, unescapeKeyPart } from './keys.js';
import type { Ctx, Plan } from './plan.js';
import { userKeys } from './scope.js';

/** The statuses counted: an action waiting for its result or for a person. */
const COUNTED = ['PENDING', 'UNKNOWN'] as const satisfies readonly ActionStatus[];
type Counted = (typeof COUNTED)[number];

/** Entries of each set checked against their records per actionStats() call. */
export const HEAL_SAMPLE = 50;

export function actionStatsKey(prefix: string, status: Counted): string {
  return `${prefix}:{stats}:ast:${status}`;
}

function member(tenant: string, user: string, id: string): string {
  return `${escapeKeyPart(tenant)}:${escapeKeyPart(user)}:${id}`;
}

/** Per plan: the last state of each action it wrote, flushed in one MULTI once the plan committed. */
const planWrites = new WeakMap<Plan, Map<string, Action>>();

/**
 * After the plan commits: the action counted under its status (if PENDING or UNKNOWN) and under no other.
 * An action written twice by one plan (begun and completed in one turn) is set once, to its last state.
 */
export function countActionAfterCommit(plan: Plan, action: Action): void {
  let actions = planWrites.get(plan);
  if (actions === undefined) {
    const written = new Map<string, Action>();
    actions = written;
    planWrites.set(plan, written);
    const ctx = plan.ctx;
    plan.after.push(async () => {
      const multi = ctx.redis.multi();
      for (const a of written.values()) {
        const m = member(a.tenant_id, a.user_id, a.id);
        for (const status of COUNTED) {
          const key = actionStatsKey(ctx.prefix, status);
          if (status === a.status) multi.zadd(key, Date.parse(a.created_at), m);
          else multi.zrem(key, m);
        }
      }
      await multi.exec().catch(() => undefined);
    });
  }
  actions.set(action.id, action);
}

/** The actions retention deleted, counted no more (called right after the retention script). */
export async function uncountActions(
  ctx: Ctx,
  tenant: string,
  user: string,
  ids: readonly string[],
): Promise<void> {
  if (ids.length === 0) return;
  const members = ids.map((id) => member(tenant, user, id));
  const multi = ctx.redis.multi();
  for (const status of COUNTED) {
    for (let i = 0; i < members.length; i += 1000) {
      multi.zrem(actionStatsKey(ctx.prefix, status), ...members.slice(i, i + 1000));
    }
  }
  await multi.exec();
}

/** The user's status index entry an entry of the `status` set stands for; null when malformed. */
function indexEntry(ctx: Ctx, status: Counted, entry: string, score: number) {
  const [tenant, user, id, ...rest] = entry.split(':');
  if (tenant === undefined || user === undefined || id === undefined || rest.length > 0) return null;
  if (!Number.isInteger(score) || Number.isNaN(new Date(score).getTime())) return null;
  const keys = userKeys(ctx, unescapeKeyPart(tenant), unescapeKeyPart(user));
  return { key: keys.actionsByStatus(status), member: indexMember(new Date(score).toISOString(), id) };
}

/** Drops up to HEAL_SAMPLE random entries of the set whose action is gone or has another status. */
async function heal(ctx: Ctx, status: Counted): Promise<void> {
  const key = actionStatsKey(ctx.prefix, status);
  const sample = await ctx.redis.zrandmember(key, HEAL_SAMPLE, 'WITHSCORES');
  const checks: Promise<string | null>[] = [];
  for (let i = 0; i + 1 < sample.length; i += 2) {
    const entry = sample[i] as string;
    const at = indexEntry(ctx, status, entry, Number(sample[i + 1]));
    checks.push(
      at === null
        ? Promise.resolve(entry)
        : ctx.redis.zscore(at.key, at.member).then((s) => (s === null ? entry : null)),
    );
  }
  const stale = (await Promise.all(checks)).filter((entry): entry is string => entry !== null);
  if (stale.length > 0) await ctx.redis.zrem(key, ...stale);
}

export async function actionStats(ctx: Ctx): Promise<ActionStats> {
  await Promise.all(COUNTED.map((status) => heal(ctx, status)));
  const [pending, unknown] = await Promise.all(
    COUNTED.map((status) => ctx.redis.zcard(actionStatsKey(ctx.prefix, status))),
  );
  return { pending: pending ?? 0, unknown: unknown ?? 0 };
}
