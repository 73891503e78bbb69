/**
 * Reading checkpoints back: their rows, then every blob of the manifests' append chains that the store's
 * blob cache does not hold, in one recursive query, decoded with one ChannelDecoder per call, so a page of
 * history parses each blob once.
 */
import type { JsonObject } from '../../core/json.js';
import type { Checkpoint } from '../../core/model.js';
import type { BlobCache, Wholes } from '../shared/blob-cache.js';
import {
  type BlobRow,
  ChannelDecoder,
  MAX_CHAIN_LINKS,
  type Manifest,
  manifestHashes,
} from '../shared/checkpoint-codec.js';
import type { ReadScope } from '../types.js';
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

export const CHECKPOINT_COLUMNS =
  'id, tenant_id, user_id, run_id, session_id, task_id, step, parent_id, label, manifest, metadata, created_at';

/**
 * Every blob that the given hashes need, following `base` links, of one (tenant, user, run). `links`:
 * `apart` when the hashes are one checkpoint's (its channels' chains seldom meet): each link is read once
 * with its row, in one walk down the chains; `shared` when they are many checkpoints' (a page of history,
 * a run's retention: links of the same chains): the chains are walked first, each link once, then their
 * rows read.
 */
export async function chainBlobs(
  q: SqlExecutor,
  owner: readonly [string, string, string],
  hashes: string[],
  links: 'apart' | 'shared',
) {
  const blobs = new Map<string, BlobRow>();
  if (hashes.length === 0) return blobs;
  const marks = hashes.map(() => '?').join(', ');
  const rows =
    links === 'apart'
      ? await q.all(
          `WITH RECURSIVE chain(hash, base, data, links) AS (
            SELECT hash, base, data, 0 FROM checkpoint_blobs
              WHERE tenant_id = ? AND user_id = ? AND run_id = ? AND hash IN (${marks})
            UNION ALL
            SELECT b.hash, b.base, b.data, c.links + 1 FROM chain c CROSS JOIN checkpoint_blobs b
              WHERE b.tenant_id = ? AND b.user_id = ? AND b.run_id = ? AND b.hash = c.base AND c.links < ?)
          SELECT hash, base, data FROM chain`,
          [...owner, ...hashes, ...owner, MAX_CHAIN_LINKS],
        )
      : await q.all(
          `WITH RECURSIVE chain(hash) AS (
            SELECT hash FROM checkpoint_blobs WHERE tenant_id = ? AND user_id = ? AND run_id = ? AND hash IN (${marks})
            UNION
            SELECT b.base FROM chain c CROSS JOIN checkpoint_blobs b
              WHERE b.tenant_id = ? AND b.user_id = ? AND b.run_id = ? AND b.hash = c.hash AND b.base IS NOT NULL)
          SELECT hash, base, data FROM checkpoint_blobs
            WHERE tenant_id = ? AND user_id = ? AND run_id = ? AND hash IN (SELECT hash FROM chain)`,
          [...owner, ...hashes, ...owner, ...owner],
        );
  for (const row of rows) {
    const hash = String(row.hash);
    blobs.set(hash, { hash, base: row.base === null ? null : String(row.base), data: String(row.data) });
  }
  return blobs;
}

/**
 * Rebuilds the checkpoints of `rows` (one read: one decoder per owner, each blob parsed once). Blobs held
 * in `cache` are not read again; those read are added to it. A checkpoint read alone takes its channels
 * from the whole values the cache keeps (copied), and leaves them kept.
 */
export async function decodeCheckpoints(
  q: SqlExecutor,
  rows: SqlRow[],
  cache: BlobCache,
): Promise<Checkpoint[]> {
  const alone = rows.length === 1 && cache.enabled;
  const decoders = new Map<string, (manifest: Manifest) => JsonObject>();
  const manifests = rows.map((row) => JSON.parse(String(row.manifest)) as Manifest);
  const owners = new Map<string, { owner: [string, string, string]; hashes: Set<string> }>();
  rows.forEach((row, i) => {
    const owner: [string, string, string] = [String(row.tenant_id), String(row.user_id), String(row.run_id)];
    const key = JSON.stringify(owner);
    const group = owners.get(key) ?? { owner, hashes: new Set<string>() };
    for (const hash of manifestHashes(manifests[i] as Manifest)) group.hashes.add(hash);
    owners.set(key, group);
  });
  for (const [key, group] of owners) {
    const blobs = new Map<string, BlobRow>();
    const wholes: Wholes | undefined = alone ? new Map() : undefined;
    const missing = cache.collect(key, group.hashes, blobs, wholes);
    if (missing.length > 0) {
      const read = await chainBlobs(q, group.owner, missing, rows.length === 1 ? 'apart' : 'shared');
      cache.add(key, read.values());
      for (const [hash, blob] of read) blobs.set(hash, blob);
    }
    if (wholes !== undefined) {
      decoders.set(key, (manifest) => cache.decodeOne(key, manifest, blobs, wholes));
    } else {
      const decoder = new ChannelDecoder(blobs);
      decoders.set(key, (manifest) => decoder.decode(manifest));
    }
  }
  return rows.map((row, i) => {
    const key = JSON.stringify([String(row.tenant_id), String(row.user_id), String(row.run_id)]);
    const decode = decoders.get(key) as (manifest: Manifest) => JsonObject;
    return {
      id: String(row.id),
      tenant_id: String(row.tenant_id),
      user_id: String(row.user_id),
      run_id: String(row.run_id),
      session_id: row.session_id === null ? null : String(row.session_id),
      task_id: row.task_id === null ? null : String(row.task_id),
      step: Number(row.step),
      parent_id: row.parent_id === null ? null : String(row.parent_id),
      label: String(row.label),
      channels: decode(manifests[i] as Manifest),
      metadata: JSON.parse(String(row.metadata)) as JsonObject,
      created_at: String(row.created_at),
    };
  });
}
