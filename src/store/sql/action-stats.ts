/**
 * Action counts for the UNKNOWN-actions gauge: one `SELECT COUNT(*) FROM actions WHERE status = ?` per
 * counted status, each a range of the index `actions_by_status_updated (status, updated_at)` (migration 2),
 * so the count reads the index entries of that status only, never the whole table.
 */
import type { ActionStatus } from '../../core/model.js';
import type { ActionStats } from '../types.js';
import type { SqlExecutor } from './executor.js';

async function countStatus(q: SqlExecutor, status: ActionStatus): Promise<number> {
  const row = await q.get('SELECT COUNT(*) AS n FROM actions WHERE status = ?', [status]);
  return Number(row?.n ?? 0);
}

/** PENDING and UNKNOWN actions across all tenants; run on one snapshot so the two counts agree. */
export async function countActions(q: SqlExecutor): Promise<ActionStats> {
  const pending = await countStatus(q, 'PENDING');
  const unknown = await countStatus(q, 'UNKNOWN');
  return { pending, unknown };
}
