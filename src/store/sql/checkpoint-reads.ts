/** Reading checkpoints back: one snapshot, blobs of every append chain fetched at once, one decoder. */
import type { Checkpoint } from '../../core/model.js';
import type { Page, ReadScope } from '../types.js';
import { CHECKPOINT_COLUMNS, decodeCheckpoints } from './checkpoints.js';
import { scopeWhere } from './context.js';
import type { SqlExecutor, SqlParam, SqlRow } from './executor.js';
import { LIMIT_PARAM } from './executor.js';

export async function selectCheckpointRows(
  q: SqlExecutor,
  scope: ReadScope,
  filter: { id?: string; run_id?: string; before_ord?: number; before_id?: string; limit?: number },
): Promise<SqlRow[]> {
  const where = scopeWhere(scope);
  const conditions = [where.sql];
  const params: SqlParam[] = [...where.params];
  if (filter.id !== undefined) {
    conditions.push('id = ?');
    params.push(filter.id);
  }
  if (filter.run_id !== undefined) {
    conditions.push('run_id = ?');
    params.push(filter.run_id);
  }
  if (filter.before_ord !== undefined) {
    conditions.push('ord < ?');
    params.push(filter.before_ord);
  }
  if (filter.before_id !== undefined) {
    // Older than the anchor, found in the same scope and run; a missing anchor matches nothing.
    const anchor = scopeWhere(scope);
    conditions.push(`ord < (SELECT ord FROM checkpoints WHERE ${anchor.sql} AND id = ? AND run_id = ?)`);
    params.push(...anchor.params, filter.before_id, filter.run_id ?? '');
  }
  const limit = filter.limit === undefined ? '' : ` ${LIMIT_PARAM}`;
  if (filter.limit !== undefined) params.push(filter.limit);
  return q.all(
    `SELECT ord, ${CHECKPOINT_COLUMNS} FROM checkpoints WHERE ${conditions.join(' AND ')} ORDER BY ord DESC${limit}`,
    params,
  );
}

/** One checkpoint by id, or the newest of a run. */
export async function readCheckpoint(
  q: SqlExecutor,
  scope: ReadScope,
  filter: { id?: string; run_id?: string },
) {
  const rows = await selectCheckpointRows(q, scope, { ...filter, limit: 1 });
  return (await decodeCheckpoints(q, rows))[0] ?? null;
}

/** Newest first; `before` (a checkpoint id, or the previous page's next_cursor) pages back through history. */
export async function listCheckpointPage(
  q: SqlExecutor,
  scope: ReadScope,
  run_id: string,
  limit: number,
  before: string | null,
): Promise<Page<Checkpoint>> {
  const rows = await selectCheckpointRows(q, scope, {
    run_id,
    limit: limit + 1,
    ...(before === null ? {} : { before_id: before }),
  });
  const items = await decodeCheckpoints(q, rows.slice(0, limit));
  const last = items[items.length - 1];
  return { items, next_cursor: rows.length > limit && last !== undefined ? last.id : null };
}
