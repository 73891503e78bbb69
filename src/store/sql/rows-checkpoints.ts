/**
 * Checkpoint rows of the SQL driver, through the channel codec: a row per checkpoint holding its manifest,
 * and blobs stored once per (tenant, user, run, hash). A put encodes against the run's last manifest (the
 * one this store wrote last, or read); reads fetch every blob of the manifests' chains in one query.
 */
import type { Checkpoint } from '../../core/model.js';
import type { DriverTx } from '../core/driver.js';
import { encodeChannels, type Manifest, runMemo } from '../shared/checkpoint-codec.js';
import { selectCheckpointRows } from './checkpoint-reads.js';
import { CHECKPOINT_COLUMNS, decodeCheckpoints } from './checkpoints.js';
import type { SqlParam } from './executor.js';
import { collectRunBlobs } from './retention.js';
import { toJson } from './rows.js';
import type { SqlTxEnv } from './tx-env.js';

type CheckpointRows = Pick<
  DriverTx,
  'getCheckpoint' | 'latestCheckpoint' | 'listCheckpoints' | 'insertCheckpoint' | 'deleteCheckpoints'
>;

const BLOB_COLUMNS = 'tenant_id, user_id, run_id, hash, base, data';

/** The key of a run in the store's last checkpoints and the codec's memos. */
const runKey = (c: { tenant_id: string; user_id: string; run_id: string }) =>
  JSON.stringify([c.tenant_id, c.user_id, c.run_id]);

export function checkpointRows({ q, lastCheckpoints }: SqlTxEnv): CheckpointRows {
  return {
    async getCheckpoint(scope, id) {
      return (await decodeCheckpoints(q, await selectCheckpointRows(q, scope, { id, limit: 1 })))[0] ?? null;
    },
    async latestCheckpoint(scope, run_id) {
      return (
        (await decodeCheckpoints(q, await selectCheckpointRows(q, scope, { run_id, limit: 1 })))[0] ?? null
      );
    },
    async listCheckpoints(scope, run_id, page) {
      const rows = await selectCheckpointRows(q, scope, {
        run_id,
        limit: page.limit,
        ...(page.before === null ? {} : { before_id: page.before }),
      });
      return decodeCheckpoints(q, rows);
    },
    async insertCheckpoint(c: Checkpoint) {
      const key = runKey(c);
      let previous: Manifest | null = null;
      const last = lastCheckpoints.get(key);
      const found = await q.get(
        `SELECT id, manifest FROM checkpoints WHERE tenant_id = ? AND user_id = ? AND run_id = ? ORDER BY ord DESC LIMIT 1`,
        [c.tenant_id, c.user_id, c.run_id],
      );
      if (found !== undefined) {
        previous =
          last !== undefined && last.id === String(found.id)
            ? last.manifest
            : (JSON.parse(String(found.manifest)) as Manifest);
      }
      const { manifest, blobs } = encodeChannels(c.channels, previous, runMemo(key));
      const changed = await q.run(
        `INSERT INTO checkpoints (${CHECKPOINT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
        [
          c.id,
          c.tenant_id,
          c.user_id,
          c.run_id,
          c.session_id,
          c.task_id,
          c.step,
          c.parent_id,
          c.label,
          JSON.stringify(manifest),
          toJson(c.metadata),
          c.created_at,
        ],
      );
      if (changed !== 1) return false;
      if (blobs.length > 0) {
        const params: SqlParam[] = [];
        for (const b of blobs) params.push(c.tenant_id, c.user_id, c.run_id, b.hash, b.base, b.data);
        await q.run(
          `INSERT INTO checkpoint_blobs (${BLOB_COLUMNS}) VALUES ${blobs.map(() => '(?, ?, ?, ?, ?, ?)').join(', ')}
            ON CONFLICT (tenant_id, user_id, run_id, hash) DO NOTHING`,
          params,
        );
      }
      lastCheckpoints.set(key, { id: c.id, manifest });
      return true;
    },
    async deleteCheckpoints(scope, run_id, ids) {
      const owners = new Map<string, [string, string, string]>();
      for (const id of ids) {
        const row = await q.get('DELETE FROM checkpoints WHERE id = ? RETURNING tenant_id, user_id', [id]);
        if (row === undefined) continue;
        const owner: [string, string, string] = [String(row.tenant_id), String(row.user_id), run_id];
        owners.set(JSON.stringify(owner), owner);
        lastCheckpoints.delete(JSON.stringify(owner));
      }
      for (const owner of owners.values()) await collectRunBlobs(q, owner);
      void scope;
    },
  };
}
