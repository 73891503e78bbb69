/**
 * The memory driver's work across all tenants: sweeps, retention and the gauges' counts. It walks its Maps
 * (it holds everything in this process; there is no index to ask).
 */
import type { Action, Session, SessionStatus, Task } from '../../core/model.js';
import { keptUntilMs } from '../shared/kept-until.js';
import type { CheckedRetention } from '../shared/retention.js';
import { emptyStats } from '../shared/retention.js';
import type { ActionStats, RetentionSweep } from '../types.js';
import { key, type Tables, type Tx } from './tables.js';

/** Deletes a session's row, from its user's too, and its messages. */
export function deleteSessionRow(t: Tables, tx: Tx, session: Session): void {
  tx.delete(t.sessions, session.id);
  tx.deleteIn(t.sessionsByUser, key(session.tenant_id, session.user_id), session.id);
  tx.delete(t.messages, session.id);
}

export function sweepExpired(t: Tables, tx: Tx, now: number, limit: number): number {
  let removed = 0;
  for (const row of t.sessions.values()) {
    if (removed >= limit) break;
    if (keptUntilMs(row.rec) > now) continue;
    deleteSessionRow(t, tx, row.rec);
    removed++;
  }
  // Deleting from a Map while iterating it visits every entry not yet deleted.
  for (const [owner, items] of t.memory) {
    for (const item of items.values()) {
      if (item.expires_at !== null && Date.parse(item.expires_at) <= now)
        tx.deleteIn(t.memory, owner, item.key);
    }
  }
  for (const [k, lease] of [...t.leases]) if (lease.expires_ms <= now) tx.delete(t.leases, k);
  for (const [k, held] of [...t.requestKeys]) if (held.expires_ms <= now) tx.delete(t.requestKeys, k);
  for (const [k, rows] of [...t.runEvents]) {
    const newest = rows[rows.length - 1];
    if (newest === undefined || Date.parse(newest.expires_at) <= now) tx.delete(t.runEvents, k);
  }
  return removed;
}

export function sessionStats(t: Tables, now: number): Record<SessionStatus, number> {
  const stats = emptyStats();
  for (const { rec } of t.sessions.values()) {
    if (Date.parse(rec.expires_at) > now) stats[rec.status] += 1;
  }
  return stats;
}

export function actionStats(t: Tables): ActionStats {
  let pending = 0;
  let unknown = 0;
  for (const { rec } of t.actions.values()) {
    if (rec.status === 'PENDING') pending++;
    else if (rec.status === 'UNKNOWN') unknown++;
  }
  return { pending, unknown };
}

function deleteAction(t: Tables, tx: Tx, action: Action): void {
  tx.delete(t.actions, action.id);
  tx.deleteIn(t.actionsByUser, key(action.tenant_id, action.user_id), action.id);
  const k = key(action.tenant_id, action.user_id, action.idempotency_key);
  if (t.actionKeys.get(k) === action.id) tx.delete(t.actionKeys, k);
}

function deleteTask(t: Tables, tx: Tx, task: Task): void {
  tx.delete(t.tasks, task.id);
  tx.delete(t.events, task.id);
  const owner = key(task.tenant_id, task.user_id);
  for (const index of [t.tasksByUser, t.openTasksByUser]) tx.deleteIn(index, owner, task.id);
}

export function sweepRetention(t: Tables, tx: Tx, r: CheckedRetention): RetentionSweep {
  let checkpoints = 0;
  let actions = 0;
  let tasks = 0;
  if (r.checkpoints_before !== null) {
    for (const [id, { rec }] of t.checkpoints) {
      if (checkpoints >= r.limit) break;
      if (rec.rec.created_at >= r.checkpoints_before) continue;
      tx.delete(t.checkpoints, id);
      checkpoints++;
    }
  }
  if (r.actions_before !== null) {
    let done = 0;
    for (const { rec } of t.actions.values()) {
      if (done >= r.limit) break;
      if (rec.status !== 'SUCCESS' && rec.status !== 'FAILED') continue;
      if (rec.updated_at >= r.actions_before) continue;
      deleteAction(t, tx, rec);
      done++;
    }
    actions += done;
  }
  if (r.tasks_before !== null) {
    const doomed = new Set<string>();
    for (const { rec } of t.tasks.values()) {
      if (doomed.size >= r.limit) break;
      if (rec.updated_at < r.tasks_before) doomed.add(key(rec.tenant_id, rec.id));
    }
    for (const { rec } of [...t.tasks.values()]) {
      if (!doomed.has(key(rec.tenant_id, rec.id))) continue;
      deleteTask(t, tx, rec);
      tasks++;
    }
    for (const { rec } of [...t.actions.values()]) {
      if (!doomed.has(key(rec.tenant_id, rec.task_id))) continue;
      deleteAction(t, tx, rec);
      actions++;
    }
    for (const [id, { rec }] of [...t.checkpoints]) {
      const task = rec.rec.task_id;
      if (task === null || !doomed.has(key(rec.rec.tenant_id, task))) continue;
      tx.delete(t.checkpoints, id);
      checkpoints++;
    }
  }
  return { tasks, actions, checkpoints };
}
