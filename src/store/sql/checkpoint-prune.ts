/** Pruning a run's history: delete old checkpoints, then every blob no kept manifest's chain references. */
import type { Manifest } from '../shared/checkpoint-codec.js';
import type { ReadScope } from '../types.js';
import { selectCheckpointRows } from './checkpoint-reads.js';
import { chainBlobs } from './checkpoints.js';
import type { SqlExecutor } from './executor.js';

export async function pruneCheckpointRows(tx: SqlExecutor, scope: ReadScope, run_id: string, keep: number) {
  const rows = await selectCheckpointRows(tx, scope, { run_id });
  const doomed = rows.slice(keep);
  if (doomed.length === 0) return 0;
  for (const row of doomed) await tx.run('DELETE FROM checkpoints WHERE ord = ?', [Number(row.ord)]);
  const owners = new Set(doomed.map((row) => JSON.stringify([String(row.tenant_id), String(row.user_id)])));
  for (const key of owners) {
    const [tenant_id, user_id] = JSON.parse(key) as [string, string];
    const kept = await tx.all(
      'SELECT manifest FROM checkpoints WHERE tenant_id = ? AND user_id = ? AND run_id = ?',
      [tenant_id, user_id, run_id],
    );
    const hashes = new Set<string>();
    for (const row of kept) {
      for (const ref of Object.values(JSON.parse(String(row.manifest)) as Manifest)) hashes.add(ref.h);
    }
    const needed = await chainBlobs(tx, [tenant_id, user_id, run_id], [...hashes]);
    const stored = await tx.all(
      'SELECT hash FROM checkpoint_blobs WHERE tenant_id = ? AND user_id = ? AND run_id = ?',
      [tenant_id, user_id, run_id],
    );
    for (const row of stored) {
      const hash = String(row.hash);
      if (needed.has(hash)) continue;
      await tx.run(
        'DELETE FROM checkpoint_blobs WHERE tenant_id = ? AND user_id = ? AND run_id = ? AND hash = ?',
        [tenant_id, user_id, run_id, hash],
      );
    }
  }
  return doomed.length;
}
