/**
 * Retention on the Redis store: across every tenant, up to `limit` records of each kind per call (the SQL
 * stores' semantics: checkpoints, then finished actions, then tasks with everything they own).
 *
 * Where to look (ages.ts writes it): each user keeps age hints of their tasks, finished actions and
 * checkpoints in their own slot, written by the record's own script; each tenant keeps its users in
 * `rtu` / `rau` / `rcu` scored at or below their oldest hint. A sweep of one kind walks the tenants of
 * `P:tenants`, the users scored before the cutoff, and gives each a share of what is left of `limit`
 * (their count of due hints). The retention script (retention-script.ts) then deletes that user's due
 * records in one atomic call, re-checking each against the record, so sweepers running at once never
 * delete or count a record twice. What it deleted is then removed from the tenant's indexes and owner
 * hash (another slot, so right after it; after a crash in between, listings skip the dangling entries),
 * and its actions (a task's go with it, whatever their status) from the PENDING / UNKNOWN counts
 * (action-stats.ts; after a crash in between, actionStats' check drops them).
 *
 * The user is then re-scored at their lowest hint left, but never above now - SETTLE_MS, and is never
 * removed: a writer lists its user (ZADD LT) before its script writes the hint, so a re-score racing with
 * a write could otherwise lift the user above a hint that lands a moment later. Held down to now -
 * SETTLE_MS, the entry stays below any hint still in flight (written on a clock behind the sweeper's by
 * less than SETTLE_MS), and an entry is never lost: at worst a user with nothing left is looked at again
 * when the cutoff passes now - SETTLE_MS.
 *
 * Records written before these hints existed (an older agentstate) have none, and are not swept.
 */
import { ACTION_STATUSES, TASK_STATES } from '../../core/model.js';
import type { CheckedRetention } from '../shared/retention.js';
import type { RetentionSweep } from '../types.js';
import { uncountActions } from './action-stats.js';
import { type AgeKind, tenantsKey, type UserKeys, unescapeKeyPart } from './keys.js';
import type { Ctx } from './plan.js';
import { tenantKeys, userKeys } from './scope.js';

/** How far below now a swept user's entry is held (see above). */
export const SETTLE_MS = 10 * 60_000;
/** Calls of the retention script for one batch before giving up on the user until the next sweep. */
const MAX_ROUNDS = 20;
/**
 * Most records of the kind one script call deletes: a task goes with its events, actions and
 * checkpoints, and Redis runs nothing else while a script runs.
 */
const SCRIPT_BATCH = 50;
/** Tenants whose due users are counted in one go. */
const TENANT_BATCH = 50;
/** Users of one tenant read per page. */
const USER_PAGE = 100;

type Counts = { tasks: number; actions: number; checkpoints: number };

const KINDS: readonly (readonly [AgeKind, 'checkpoints_before' | 'actions_before' | 'tasks_before'])[] = [
  ['checkpoints', 'checkpoints_before'],
  ['actions', 'actions_before'],
  ['tasks', 'tasks_before'],
];

/** What one retention script call deleted (ids and index members are flat pairs, as the script answers). */
interface Swept {
  readonly counts: Counts;
  /** Due hints the script looked at: fewer than its budget when no more were due. */
  readonly due: number;
  readonly low: number | null;
  readonly tasks: string[];
  readonly actions: string[];
  readonly checkpoints: string[];
  readonly emptiedRuns: string[];
}

function add(into: Counts, more: Counts): void {
  into.tasks += more.tasks;
  into.actions += more.actions;
  into.checkpoints += more.checkpoints;
}

function zero(): Counts {
  return { tasks: 0, actions: 0, checkpoints: 0 };
}

/** Keys every call is given (the script asks for the rest): the hints of `kind` first. */
function baseKeys(keys: UserKeys, kind: AgeKind): string[] {
  return [
    keys.ages(kind),
    keys.ages('tasks'),
    keys.ages('actions'),
    keys.ages('checkpoints'),
    keys.tasks(),
    keys.actions(),
    keys.actionKeys(),
    keys.runSequences(),
    keys.runLatest(),
    ...TASK_STATES.map((state) => keys.tasksByState(state)),
    ...ACTION_STATUSES.map((status) => keys.actionsByStatus(status)),
  ];
}

type ScriptReply =
  | [0, string[]]
  | [1, [number, number, number, number], string, string[], string[], string[], string[]];

/** Runs the retention script for one user, adding the keys it asks for; null when it never settles. */
async function deleteDue(
  ctx: Ctx,
  keys: UserKeys,
  kind: AgeKind,
  cutoff: number,
  budget: number,
): Promise<Swept | null> {
  const given = new Set(baseKeys(keys, kind));
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const reply = (await ctx.scripts.retention(
      given.size,
      ...given,
      kind,
      keys.base,
      cutoff,
      budget,
    )) as ScriptReply;
    if (reply[0] === 0) {
      for (const name of reply[1]) given.add(name);
      continue;
    }
    const [, [tasks, actions, checkpoints, due], low, taskPairs, actionPairs, checkpointIds, emptiedRuns] =
      reply;
    return {
      counts: { tasks, actions, checkpoints },
      due,
      low: low === '' ? null : Number(low),
      tasks: taskPairs,
      actions: actionPairs,
      checkpoints: checkpointIds,
      emptiedRuns,
    };
  }
  return null;
}

function evens(pairs: readonly string[]): string[] {
  return pairs.filter((_, i) => i % 2 === 0);
}

function odds(pairs: readonly string[]): string[] {
  return pairs.filter((_, i) => i % 2 === 1);
}

function chunks<T>(items: readonly T[], size = 1000): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** Removes what the script deleted from the tenant's indexes, owner hash and action counts. */
async function untrack(ctx: Ctx, tenant: string, user: string, swept: Swept): Promise<void> {
  const tk = tenantKeys(ctx, tenant);
  const owners = tk.owners();
  const ids = [...evens(swept.tasks), ...evens(swept.actions), ...swept.checkpoints];
  const runIds = swept.emptiedRuns.map((run) => `run:${run}`);
  await Promise.all([
    ...chunks(odds(swept.tasks)).map((members) => ctx.redis.zrem(tk.tasks(), ...members)),
    ...chunks(odds(swept.actions)).map((members) => ctx.redis.zrem(tk.actions(), ...members)),
    ...chunks([...ids, ...runIds]).map((part) => ctx.scripts.releaseOwners(1, owners, user, ...part)),
    uncountActions(ctx, tenant, user, evens(swept.actions)),
  ]);
  if (swept.emptiedRuns.length === 0) return;
  // A put into an emptied run may have landed meanwhile (its owner entry just went): list it again.
  const sequences = userKeys(ctx, tenant, user).runSequences();
  await Promise.all(
    swept.emptiedRuns.map(async (run) => {
      if ((await ctx.redis.hexists(sequences, run)) === 1) await ctx.redis.hsetnx(owners, `run:${run}`, user);
    }),
  );
}

/** Sweeps one user's due records of `kind` (at most `budget`; 0 only re-scores) and re-scores the user. */
async function sweepUser(
  ctx: Ctx,
  kind: AgeKind,
  tenant: string,
  user: string,
  cutoff: number,
  budget: number,
): Promise<Counts> {
  const keys = userKeys(ctx, tenant, user);
  const counts = zero();
  let low: number | null = null;
  let left = budget;
  while (left > 0) {
    const batch = Math.min(left, SCRIPT_BATCH);
    const swept = await deleteDue(ctx, keys, kind, cutoff, batch);
    // Not settled (the user's records kept changing): the entry stays as it is, for the next sweep.
    if (swept === null) return counts;
    await untrack(ctx, tenant, user, swept);
    add(counts, swept.counts);
    left -= swept.counts[kind];
    low = swept.low;
    if (swept.due < batch) break;
  }
  if (budget === 0) {
    const first = await ctx.redis.zrange(keys.ages(kind), 0, 0, 'WITHSCORES');
    low = first[1] === undefined ? null : Number(first[1]);
  }
  const held = ctx.clock.now() - SETTLE_MS;
  await ctx.redis.zadd(
    tenantKeys(ctx, tenant).agedUsers(kind),
    low === null ? held : Math.min(low, held),
    user,
  );
  return counts;
}

/**
 * Sweeps the due users of one tenant, each at most once, until `budget` records of `kind` went. Pages
 * move on past users already seen: a swept user usually leaves the range (re-scored at or after the
 * cutoff), or stays in it held below now (cutoff within SETTLE_MS of now) and is skipped when met again.
 */
async function sweepTenant(
  ctx: Ctx,
  kind: AgeKind,
  tenant: string,
  cutoff: number,
  budget: number,
): Promise<Counts> {
  const users = tenantKeys(ctx, tenant).agedUsers(kind);
  const counts = zero();
  const visited = new Set<string>();
  let offset = 0;
  while (counts[kind] < budget) {
    const page = await ctx.redis.zrangebyscore(users, '-inf', `(${cutoff}`, 'LIMIT', offset, USER_PAGE);
    if (page.length === 0) break;
    const fresh = page.filter((user) => !visited.has(user));
    if (fresh.length === 0) {
      offset += page.length;
      continue;
    }
    const due = await Promise.all(
      fresh.map((user) => ctx.redis.zcount(userKeys(ctx, tenant, user).ages(kind), '-inf', `(${cutoff}`)),
    );
    let left = budget - counts[kind];
    const jobs: Promise<Counts>[] = [];
    for (const [i, user] of fresh.entries()) {
      const count = due[i] ?? 0;
      if (count > 0 && left === 0) break;
      const share = Math.min(count, left);
      left -= share;
      visited.add(user);
      jobs.push(sweepUser(ctx, kind, tenant, user, cutoff, share));
    }
    for (const swept of await Promise.all(jobs)) add(counts, swept);
  }
  return counts;
}

async function sweepKind(ctx: Ctx, kind: AgeKind, cutoff: number, limit: number): Promise<Counts> {
  const counts = zero();
  const tenants = (await ctx.redis.smembers(tenantsKey(ctx.prefix))).map(unescapeKeyPart);
  for (let i = 0; i < tenants.length && counts[kind] < limit; i += TENANT_BATCH) {
    const batch = tenants.slice(i, i + TENANT_BATCH);
    const due = await Promise.all(
      batch.map((tenant) => ctx.redis.zcount(tenantKeys(ctx, tenant).agedUsers(kind), '-inf', `(${cutoff}`)),
    );
    for (const [j, tenant] of batch.entries()) {
      if (counts[kind] >= limit) break;
      if ((due[j] ?? 0) > 0) add(counts, await sweepTenant(ctx, kind, tenant, cutoff, limit - counts[kind]));
    }
  }
  return counts;
}

export async function sweepRetention(ctx: Ctx, checked: CheckedRetention): Promise<RetentionSweep> {
  const total = zero();
  for (const [kind, field] of KINDS) {
    const before = checked[field];
    if (before !== null) add(total, await sweepKind(ctx, kind, Date.parse(before), checked.limit));
  }
  return total;
}
