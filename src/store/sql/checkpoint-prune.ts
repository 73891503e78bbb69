/** Pruning a run's history: delete old checkpoints, then every blob no kept manifest's chain references. */
import type { ReadScope } from '../types.js';
import { selectCheckpointRows } from './checkpoint-reads.js';
import type { SqlExecutor } from './executor.js';
import { collectRunBlobs } from './retention.js';

export async function pruneCheckpointRows(tx: SqlExecutor, scope: ReadScope, run_id: string, keep: number) {
  const rows = await selectCheckpointRows(tx, scope, { run_id });
  const doomed = rows.slice(keep);
  if (doomed.length === 0) return 0;
  for (const row of doomed) await tx.run('DELETE FROM checkpoints WHERE ord = ?', [Number(row.ord)]);
  const owners = new Set(doomed.map((row) => JSON.stringify([String(row.tenant_id), String(row.user_id)])));
  for (const key of owners) {
    const [tenant_id, user_id] = JSON.parse(key) as [string, string];
    await collectRunBlobs(tx, [tenant_id, user_id, run_id]);
  }
  return doomed.length;
}
