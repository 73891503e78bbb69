/**
 * Lifecycle calls of the SQL stores: session counts by status (one index range count per status on
 * sessions_by_status_expiry) and the retention sweep (old checkpoints with the blobs nothing needs any
 * more, finished actions, old tasks with their events, actions and checkpoints), each kind found through
 * its own index, at most `limit` per kind per call.
 */
import type { SessionStatus } from '../../core/model.js';
import type { Manifest } from '../shared/checkpoint-codec.js';
import { type CheckedRetention, emptyStats, LIVE_STATUSES } from '../shared/retention.js';
import type { RetentionSweep } from '../types.js';
import { chainBlobs } from './checkpoints.js';
import { nowIso, type SqlContext } from './context.js';
import type { SqlExecutor } from './executor.js';

export async function countSessions(ctx: SqlContext, q: SqlExecutor): Promise<Record<SessionStatus, number>> {
  const stats = emptyStats();
  const now = nowIso(ctx);
  for (const status of LIVE_STATUSES) {
    const row = await q.get('SELECT COUNT(*) AS n FROM sessions WHERE status = ? AND expires_at > ?', [
      status,
      now,
    ]);
    stats[status] = Number(row?.n ?? 0);
  }
  return stats;
}

type Owner = readonly [string, string, string];

/** Deletes every blob of a run that no remaining checkpoint's manifest chain needs. */
export async function collectRunBlobs(tx: SqlExecutor, owner: Owner): Promise<void> {
  const kept = await tx.all(
    'SELECT manifest FROM checkpoints WHERE tenant_id = ? AND user_id = ? AND run_id = ?',
    [...owner],
  );
  if (kept.length === 0) {
    await tx.run('DELETE FROM checkpoint_blobs WHERE tenant_id = ? AND user_id = ? AND run_id = ?', [
      ...owner,
    ]);
    return;
  }
  const hashes = new Set<string>();
  for (const row of kept) {
    for (const ref of Object.values(JSON.parse(String(row.manifest)) as Manifest)) hashes.add(ref.h);
  }
  const needed = await chainBlobs(tx, owner, [...hashes]);
  const stored = await tx.all(
    'SELECT hash FROM checkpoint_blobs WHERE tenant_id = ? AND user_id = ? AND run_id = ?',
    [...owner],
  );
  for (const row of stored) {
    if (needed.has(String(row.hash))) continue;
    await tx.run(
      'DELETE FROM checkpoint_blobs WHERE tenant_id = ? AND user_id = ? AND run_id = ? AND hash = ?',
      [...owner, String(row.hash)],
    );
  }
}

/** Deletes checkpoint rows (by ord), then the blobs their runs no longer need. */
async function deleteCheckpoints(tx: SqlExecutor, rows: Record<string, unknown>[]): Promise<number> {
  const runs = new Map<string, Owner>();
  for (const row of rows) {
    await tx.run('DELETE FROM checkpoints WHERE ord = ?', [Number(row.ord)]);
    const owner: Owner = [String(row.tenant_id), String(row.user_id), String(row.run_id)];
    runs.set(JSON.stringify(owner), owner);
  }
  for (const owner of runs.values()) await collectRunBlobs(tx, owner);
  return rows.length;
}

export async function sweepCheckpoints(tx: SqlExecutor, before: string, limit: number, claim: string) {
  const rows = await tx.all(
    `SELECT ord, tenant_id, user_id, run_id FROM checkpoints WHERE created_at < ? ORDER BY created_at LIMIT ?${claim}`,
    [before, limit],
  );
  return deleteCheckpoints(tx, rows);
}

export async function sweepActions(tx: SqlExecutor, before: string, limit: number, claim: string) {
  let removed = 0;
  for (const status of ['SUCCESS', 'FAILED']) {
    const rows = await tx.all(
      `SELECT ord FROM actions WHERE status = ? AND updated_at < ? ORDER BY updated_at LIMIT ?${claim}`,
      [status, before, limit - removed],
    );
    for (const row of rows) await tx.run('DELETE FROM actions WHERE ord = ?', [Number(row.ord)]);
    removed += rows.length;
    if (removed >= limit) break;
  }
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

export async function sweepTasks(
  tx: SqlExecutor,
  before: string,
  limit: number,
  claim: string,
): Promise<DetailedSweep> {
  const rows = await tx.all(
    `SELECT ord, id, tenant_id, user_id FROM tasks WHERE updated_at < ? ORDER BY updated_at LIMIT ?${claim}`,
    [before, limit],
  );
  let actions = 0;
  let checkpoints = 0;
  for (const row of rows) {
    const where = [String(row.tenant_id), String(row.id)];
    await tx.run('DELETE FROM task_events WHERE tenant_id = ? AND task_id = ?', where);
    actions += await tx.run('DELETE FROM actions WHERE tenant_id = ? AND task_id = ?', where);
    const owned = await tx.all(
      'SELECT ord, tenant_id, user_id, run_id FROM checkpoints WHERE tenant_id = ? AND task_id = ?',
      where,
    );
    checkpoints += await deleteCheckpoints(tx, owned);
    await tx.run('DELETE FROM tasks WHERE ord = ?', [Number(row.ord)]);
  }
  const deleted_tasks = rows.map((row) => ({
    tenant_id: String(row.tenant_id),
    user_id: String(row.user_id),
    id: String(row.id),
  }));
  return { tasks: rows.length, actions, checkpoints, deleted_tasks };
}

/** The whole retention sweep, each kind in its own transaction (`write` runs one). */
export async function sweepRetentionRows(
  write: <T>(work: (tx: SqlExecutor) => Promise<T>) => Promise<T>,
  r: CheckedRetention,
  claim: string,
): Promise<DetailedSweep> {
  let checkpoints = 0;
  let deleted_tasks: SweptTask[] = [];
  let actions = 0;
  let tasks = 0;
  if (r.checkpoints_before !== null) {
    const before = r.checkpoints_before;
    checkpoints += await write((tx) => sweepCheckpoints(tx, before, r.limit, claim));
  }
  if (r.actions_before !== null) {
    const before = r.actions_before;
    actions += await write((tx) => sweepActions(tx, before, r.limit, claim));
  }
  if (r.tasks_before !== null) {
    const before = r.tasks_before;
    const swept = await write((tx) => sweepTasks(tx, before, r.limit, claim));
    tasks += swept.tasks;
    actions += swept.actions;
    checkpoints += swept.checkpoints;
    deleted_tasks = swept.deleted_tasks;
  }
  return { tasks, actions, checkpoints, deleted_tasks };
}
