/**
 * Lifecycle calls of the memory store: session and action counts by status and the retention sweep. The
 * memory store counts by walking its Maps (it holds everything in this process; there is no index to ask).
 */
import type { Action, SessionStatus } from '../../core/model.js';
import type { CheckedRetention } from '../shared/retention.js';
import { emptyStats } from '../shared/retention.js';
import type { ActionStats, RetentionSweep } from '../types.js';
import { type Ctx, key } from './db.js';
import { deleteTaskRow } from './tasks.js';

export function sessionStats(c: Ctx): Record<SessionStatus, number> {
  const stats = emptyStats();
  for (const { rec } of c.t.sessions.values()) {
    if (Date.parse(rec.expires_at) > c.now) stats[rec.status] += 1;
  }
  return stats;
}

export function actionStats(c: Ctx): ActionStats {
  let pending = 0;
  let unknown = 0;
  for (const { rec } of c.t.actions.values()) {
    if (rec.status === 'PENDING') pending++;
    else if (rec.status === 'UNKNOWN') unknown++;
  }
  return { pending, unknown };
}

function deleteAction(c: Ctx, action: Action): void {
  c.tx.delete(c.t.actions, action.id);
  const k = key(action.tenant_id, action.user_id, action.idempotency_key);
  if (c.t.actionKeys.get(k) === action.id) c.tx.delete(c.t.actionKeys, k);
}

export function sweepRetention(c: Ctx, r: CheckedRetention): RetentionSweep {
  let checkpoints = 0;
  let actions = 0;
  let tasks = 0;
  if (r.checkpoints_before !== null) {
    for (const [id, { rec }] of c.t.checkpoints) {
      if (checkpoints >= r.limit) break;
      if (rec.created_at >= r.checkpoints_before) continue;
      c.tx.delete(c.t.checkpoints, id);
      checkpoints++;
    }
  }
  if (r.actions_before !== null) {
    let done = 0;
    for (const { rec } of c.t.actions.values()) {
      if (done >= r.limit) break;
      if (rec.status !== 'SUCCESS' && rec.status !== 'FAILED') continue;
      if (rec.updated_at >= r.actions_before) continue;
      deleteAction(c, rec);
      done++;
    }
    actions += done;
  }
  if (r.tasks_before !== null) {
    const doomed = new Set<string>();
    for (const { rec } of c.t.tasks.values()) {
      if (doomed.size >= r.limit) break;
      if (rec.updated_at < r.tasks_before) doomed.add(key(rec.tenant_id, rec.id));
    }
    for (const [id, { rec }] of c.t.tasks) {
      if (!doomed.has(key(rec.tenant_id, id))) continue;
      deleteTaskRow(c, id, rec);
      c.tx.delete(c.t.events, id);
      tasks++;
    }
    for (const { rec } of c.t.actions.values()) {
      if (!doomed.has(key(rec.tenant_id, rec.task_id))) continue;
      deleteAction(c, rec);
      actions++;
    }
    for (const [id, { rec }] of c.t.checkpoints) {
      if (rec.task_id === null || !doomed.has(key(rec.tenant_id, rec.task_id))) continue;
      c.tx.delete(c.t.checkpoints, id);
      checkpoints++;
    }
  }
  return { tasks, actions, checkpoints };
}
