/**
 * Checkpoint rows of the SQL driver, through the channel codec: a row per checkpoint holding its manifest,
 * and blobs stored once per (tenant, user, run, hash). A put encodes against the run's last manifest (the
 * one this store wrote last, or read); reads fetch the blobs of the manifests' chains that the store's
 * blob cache does not hold in one query. The blobs a put writes are added to the cache.
 */
import type { Checkpoint } from '../../core/model.js';
import type { DriverTx } from '../core/driver.js';
import { type BlobRow, encodeChannels, type Manifest, runMemo } from '../shared/checkpoint-codec.js';
import { CHECKPOINT_COLUMNS, decodeCheckpoints, selectCheckpointRows } from './checkpoint-reads.js';
import type { WrittenCheckpoint } from './context.js';
import type { SqlExecutor, SqlParam } from './executor.js';
import { collectRunBlobs } from './retention.js';
import { toJson } from './rows.js';
import type { SqlTxEnv } from './tx-env.js';

type CheckpointRows = Pick<
  DriverTx,
  'getCheckpoint' | 'latestCheckpoint' | 'listCheckpoints' | 'insertCheckpoint' | 'deleteCheckpoints'
>;

const BLOB_COLUMNS = 'tenant_id, user_id, run_id, hash, base, data';
const BLOB_ROW = '(?, ?, ?, ?, ?, ?)';

/** The key of a run in the store's last checkpoints and the codec's memos. */
const runKey = (c: { tenant_id: string; user_id: string; run_id: string }) =>
  JSON.stringify([c.tenant_id, c.user_id, c.run_id]);

export function checkpointRows(env: SqlTxEnv): CheckpointRows {
  const { q, lastCheckpoints, dialect, blobCache } = env;
  return {
    async getCheckpoint(scope, id) {
      return (
        (await decodeCheckpoints(q, await selectCheckpointRows(q, scope, { id, limit: 1 }), blobCache))[0] ??
        null
      );
    },
    async latestCheckpoint(scope, run_id) {
      return (
        (
          await decodeCheckpoints(q, await selectCheckpointRows(q, scope, { run_id, limit: 1 }), blobCache)
        )[0] ?? null
      );
    },
    async listCheckpoints(scope, run_id, page) {
      const rows = await selectCheckpointRows(q, scope, {
        run_id,
        limit: page.limit,
        ...(page.before === null ? {} : { before_id: page.before }),
      });
      return decodeCheckpoints(q, rows, blobCache);
    },
    async insertCheckpoint(c: Checkpoint) {
      return dialect.name === 'postgres' ? insertInOneStatement(env, c) : insertInTransaction(env, c);
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

function rowParams(c: Checkpoint, manifest: Manifest): SqlParam[] {
  return [
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
  ];
}

function blobParams(c: Checkpoint, blobs: readonly BlobRow[]): SqlParam[] {
  const params: SqlParam[] = [];
  for (const b of blobs) params.push(c.tenant_id, c.user_id, c.run_id, b.hash, b.base, b.data);
  return params;
}

/** The run's newest checkpoint as stored: the manifest the next one is encoded against. */
async function newest(q: SqlExecutor, c: Checkpoint): Promise<WrittenCheckpoint | null> {
  const found = await q.get(
    'SELECT id, manifest FROM checkpoints WHERE tenant_id = ? AND user_id = ? AND run_id = ? ORDER BY ord DESC LIMIT 1',
    [c.tenant_id, c.user_id, c.run_id],
  );
  return found === undefined
    ? null
    : { id: String(found.id), manifest: JSON.parse(String(found.manifest)) as Manifest };
}

/**
 * SQLite: the row and its blobs by separate statements, in the caller's transaction. Encoded against the
 * run's last checkpoint as this store wrote it (or read it), with nothing read first: the row is stored
 * only while that one is still stored with the same manifest (its blobs are removed only with it), and
 * the id is free. When it is gone, the run's newest checkpoint is read and the put encoded against that.
 * A first checkpoint (no parent) of a run this store knows nothing of is stored whole, with nothing read.
 */
async function insertInTransaction(
  { q, lastCheckpoints, blobCache }: SqlTxEnv,
  c: Checkpoint,
): Promise<boolean> {
  const key = runKey(c);
  const memo = runMemo(key);
  let last = lastCheckpoints.get(key) ?? (c.parent_id === null ? null : await newest(q, c));
  for (let attempt = 0; ; attempt++) {
    const { manifest, blobs } = encodeChannels(c.channels, last?.manifest ?? null, memo);
    const changed =
      last === null
        ? await q.run(
            `INSERT INTO checkpoints (${CHECKPOINT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
            rowParams(c, manifest),
          )
        : await q.run(
            `INSERT INTO checkpoints (${CHECKPOINT_COLUMNS}) SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?
              WHERE EXISTS (SELECT 1 FROM checkpoints WHERE id = ? AND tenant_id = ? AND user_id = ? AND run_id = ? AND manifest = ?)
              ON CONFLICT (id) DO NOTHING`,
            [
              ...rowParams(c, manifest),
              last.id,
              c.tenant_id,
              c.user_id,
              c.run_id,
              JSON.stringify(last.manifest),
            ],
          );
    if (changed === 1) {
      if (blobs.length > 0) {
        await q.run(
          `INSERT INTO checkpoint_blobs (${BLOB_COLUMNS}) VALUES ${blobs.map(() => BLOB_ROW).join(', ')}
            ON CONFLICT (tenant_id, user_id, run_id, hash) DO NOTHING`,
          blobParams(c, blobs),
        );
        blobCache.add(key, blobs);
      }
      lastCheckpoints.set(key, { id: c.id, manifest });
      return true;
    }
    lastCheckpoints.delete(key);
    if (last === null || (await q.get('SELECT 1 AS one FROM checkpoints WHERE id = ?', [c.id])) !== undefined)
      return false;
    // Read in this transaction, the newest is still there; whole, the put needs none.
    last = attempt === 0 ? await newest(q, c) : null;
  }
}

/**
 * PostgreSQL: blobs and row in one statement, atomic by itself (so a put needs no transaction), encoded
 * against the run's last checkpoint as this store wrote it (or read it) and stored only while that one
 * still exists with the same manifest (its blobs are removed only with it; another store may have replaced
 * it under the same id) and the id is free. A manifest encoded against an
 * older checkpoint than the newest is still whole: it only stores more. When the one it was encoded
 * against is gone, the put is encoded whole.
 */
async function insertInOneStatement(
  { q, lastCheckpoints, blobCache }: SqlTxEnv,
  c: Checkpoint,
): Promise<boolean> {
  const key = runKey(c);
  // A first checkpoint (no parent) of a run this store knows nothing of is stored whole, with nothing read.
  let last = lastCheckpoints.get(key) ?? (c.parent_id === null ? null : await newest(q, c));
  for (;;) {
    const { manifest, blobs } = encodeChannels(c.channels, last?.manifest ?? null, runMemo(key));
    const free = 'NOT EXISTS (SELECT 1 FROM checkpoints WHERE id = ?)';
    const guard =
      last === null
        ? `ok AS (SELECT 1 AS one WHERE ${free})`
        : `ok AS (SELECT 1 AS one WHERE ${free} AND EXISTS (SELECT 1 FROM checkpoints WHERE id = ? AND tenant_id = ? AND user_id = ? AND run_id = ? AND manifest = ?))`;
    const guardParams: SqlParam[] =
      last === null
        ? [c.id]
        : [c.id, last.id, c.tenant_id, c.user_id, c.run_id, JSON.stringify(last.manifest)];
    const insertBlobs =
      blobs.length === 0
        ? ''
        : `, blobs AS (INSERT INTO checkpoint_blobs (${BLOB_COLUMNS})
          SELECT v.* FROM (VALUES ${blobs.map(() => BLOB_ROW).join(', ')}) AS v(${BLOB_COLUMNS})
          WHERE EXISTS (SELECT 1 FROM ok) ON CONFLICT (tenant_id, user_id, run_id, hash) DO NOTHING)`;
    const inserted = await q.run(
      `WITH ${guard}${insertBlobs} INSERT INTO checkpoints (${CHECKPOINT_COLUMNS})
        SELECT ?, ?, ?, ?, ?, ?, CAST(? AS INTEGER), ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM ok)`,
      [...guardParams, ...blobParams(c, blobs), ...rowParams(c, manifest)],
    );
    if (inserted === 1) {
      blobCache.add(key, blobs);
      lastCheckpoints.set(key, { id: c.id, manifest });
      return true;
    }
    lastCheckpoints.delete(key);
    if (last === null || (await q.get('SELECT 1 AS one FROM checkpoints WHERE id = ?', [c.id])) !== undefined)
      return false;
    last = null;
  }
}
