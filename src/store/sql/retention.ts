import type { Manifest } from '../shared/checkpoint-codec.js';
import type { CheckedRetention } from '../shared/retention.js';
import type { RetentionSweep } from '../types.js';
import { chainBlobs } from './checkpoint-reads.js';
import type { SqlDialect, SqlExecutor, SqlRow } from './executor.js';
import { LIMIT_PARAM } from './executor.js';
import { DeletedTally, inBatches, type Pacer } from './sweep-batches.js';

type Owner = readonly [string, string, string];

/** Deletes every blob of a run that no remaining checkpoint's manifest chain needs; returns how many. */
export async function collectRunBlobs(tx: SqlExecutor, owner: Owner): Promise<number> {
  const kept = await tx.all(
    'SELECT manifest FROM checkpoints WHERE tenant_id = ? AND user_id = ? AND run_id = ?',
    [...owner],
  );
  if (kept.length === 0) {
    return tx.run('DELETE FROM checkpoint_blobs WHERE tenant_id = ? AND user_id = ? AND run_id = ?', [
      ...owner,
    ]);
  }
  const hashes = new Set<string>();
  for (const row of kept) {
    for (const ref of Object.values(JSON.parse(String(row.manifest)) as Manifest)) hashes.add(ref.h);
  }
  const needed = await chainBlobs(tx, owner, [...hashes], 'shared');
  const stored = await tx.all(
    'SELECT hash FROM checkpoint_blobs WHERE tenant_id = ? AND user_id = ? AND run_id = ?',
    [...owner],
  );
  let deleted = 0;
  for (const row of stored) {
    if (needed.has(String(row.hash))) continue;
    deleted += await tx.run(
      'DELETE FROM checkpoint_blobs WHERE tenant_id = ? AND user_id = ? AND run_id = ? AND hash = ?',
      [...owner, String(row.hash)],
    );
  }
  return deleted;
}

/** Collects the blobs of every run that lost checkpoints (`rows`: the owners of the deleted checkpoints). */
async function collectBlobsOf(tx: SqlExecutor, rows: readonly SqlRow[], counted: DeletedTally) {
  const runs = new Map<string, Owner>();
  for (const row of rows) {
    const owner: Owner = [String(row.tenant_id), String(row.user_id), String(row.run_id)];
    runs.set(JSON.stringify(owner), owner);
  }
  for (const owner of runs.values()) counted.add('checkpoint_blobs', await collectRunBlobs(tx, owner));
}

/** Deletes up to `limit` checkpoints created before `before` (oldest first) with one statement, then their blobs. */
export async function sweepCheckpoints(
  tx: SqlExecutor,
  before: string,
  limit: number,
  d: SqlDialect,
  counted: DeletedTally,
) {
  const deleted = await tx.all(
    `DELETE FROM checkpoints WHERE ord IN
      (SELECT ord FROM checkpoints WHERE created_at < ? ORDER BY created_at ${LIMIT_PARAM}${d.claimRows})
      RETURNING tenant_id, user_id, run_id`,
    [before, limit],
  );
  counted.add('checkpoints', deleted.length);
  await collectBlobsOf(tx, deleted, counted);
  return deleted.length;
}

/** Deletes up to `limit` finished actions last changed before `before`, one statement per status. */
export async function sweepActions(
  tx: SqlExecutor,
  before: string,
  limit: number,
  d: SqlDialect,
  counted: DeletedTally,
) {
  let removed = 0;
  for (const status of ['SUCCESS', 'FAILED']) {
    removed += await tx.run(
      `DELETE FROM actions WHERE ord IN
        (SELECT ord FROM actions WHERE status = ? AND updated_at < ? ORDER BY updated_at ${LIMIT_PARAM}${d.claimRows})`,
      [status, before, limit - removed],
    );
    if (removed >= limit) break;
  }
  counted.add('actions', removed);
  return removed;
}

/** A task the sweep deleted (the tiered store drops its hot copy). */
export interface SweptTask {
  readonly tenant_id: string;
  readonly user_id: string;
  readonly id: string;
}

export interface DetailedSweep extends RetentionSweep {
  readonly deleted_tasks: SweptTask[];
}

/**
 * Deletes up to `limit` tasks last changed before `before` (oldest first) with their events, actions and
 * checkpoints: claims the tasks' ords, then one statement per dependent table finds the rows of all those
 * tasks through its (tenant_id, task_id) index, then the tasks go.
 */
export async function sweepTasks(
  tx: SqlExecutor,
  before: string,
  limit: number,
  d: SqlDialect,
  counted: DeletedTally,
): Promise<DetailedSweep> {
  const rows = await tx.all(
    `SELECT ord, id, tenant_id, user_id FROM tasks WHERE updated_at < ? ORDER BY updated_at ${LIMIT_PARAM}${d.claimRows}`,
    [before, limit],
  );
  if (rows.length === 0) return { tasks: 0, actions: 0, checkpoints: 0, deleted_tasks: [] };
  const ords = [JSON.stringify(rows.map((row) => Number(row.ord)))];
  const ofTasks = `(tenant_id, task_id) IN (SELECT tenant_id, id FROM tasks WHERE ${d.inIntegers('ord')})`;
  counted.add('task_events', await tx.run(`DELETE FROM task_events WHERE ${ofTasks}`, ords));
  const actions = await tx.run(`DELETE FROM actions WHERE ${ofTasks}`, ords);
  const checkpoints = await tx.all(
    `DELETE FROM checkpoints WHERE ${ofTasks} RETURNING tenant_id, user_id, run_id`,
    ords,
  );
  await collectBlobsOf(tx, checkpoints, counted);
  const tasks = await tx.run(`DELETE FROM tasks WHERE ${d.inIntegers('ord')}`, ords);
  counted.add('actions', actions);
  counted.add('checkpoints', checkpoints.length);
  counted.add('tasks', tasks);
  const deleted_tasks = rows.map((row) => ({
    tenant_id: String(row.tenant_id),
    user_id: String(row.user_id),
    id: String(row.id),
  }));
  return { tasks, actions, checkpoints: checkpoints.length, deleted_tasks };
}

/** What a retention sweep runs on: one write transaction at a time, paced per kind. */
export interface RetentionRun {
  write<T>(work: (tx: SqlExecutor) => Promise<T>): Promise<T>;
  /** Runs between two batches (the driver's checkpoint), when there is one. */
  readonly between: (() => Promise<void>) | undefined;
  readonly dialect: SqlDialect;
  readonly pacers: { readonly checkpoints: Pacer; readonly actions: Pacer; readonly tasks: Pacer };
  /** Gets the rows deleted from each table added. */
  readonly tally: DeletedTally;
}

/**
 * The whole retention sweep: each kind in batches of short transactions (sized by its pacer), up to
 * `r.limit` of each kind.
 */
export async function sweepRetentionRows(run: RetentionRun, r: CheckedRetention): Promise<DetailedSweep> {
  const { dialect: d, pacers, tally } = run;
  /** Runs one batch in a transaction; what it counted joins the tally once the transaction committed. */
  const batch = async <T>(work: (tx: SqlExecutor, counted: DeletedTally) => Promise<T>): Promise<T> => {
    const [result, counted] = await run.write(async (tx) => {
      const counted = new DeletedTally();
      return [await work(tx, counted), counted] as const;
    });
    tally.merge(counted);
    return result;
  };
  let checkpoints = 0;
  let actions = 0;
  let tasks = 0;
  const deleted_tasks: SweptTask[] = [];
  const { checkpoints_before, actions_before, tasks_before } = r;
  if (checkpoints_before !== null) {
    checkpoints += await inBatches({
      pacer: pacers.checkpoints,
      limit: r.limit,
      step: (size) => batch((tx, counted) => sweepCheckpoints(tx, checkpoints_before, size, d, counted)),
      between: run.between,
    });
  }
  if (actions_before !== null) {
    actions += await inBatches({
      pacer: pacers.actions,
      limit: r.limit,
      step: (size) => batch((tx, counted) => sweepActions(tx, actions_before, size, d, counted)),
      between: run.between,
    });
  }
  if (tasks_before !== null) {
    tasks += await inBatches({
      pacer: pacers.tasks,
      limit: r.limit,
      step: async (size) => {
        const swept = await batch((tx, counted) => sweepTasks(tx, tasks_before, size, d, counted));
        actions += swept.actions;
        checkpoints += swept.checkpoints;
        deleted_tasks.push(...swept.deleted_tasks);
        return swept.tasks;
      },
      between: run.between,
    });
  }
  return { tasks, actions, checkpoints, deleted_tasks };
}
