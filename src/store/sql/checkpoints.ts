/**
 * Checkpoints through the channel codec: a row per checkpoint holding its manifest, and blobs stored once
 * per (tenant, user, run, hash). Reads fetch every blob of the manifests' append chains in one recursive
 * query and decode with one ChannelDecoder per call, so a page of history parses each blob once.
 */

import { newId } from '../../core/ids.js';
import type { JsonObject } from '../../core/json.js';
import { isPlainJsonObject } from '../../core/json.js';
import type { Checkpoint } from '../../core/model.js';
import {
  type BlobRow,
  ChannelDecoder,
  encodeChannels,
  type Manifest,
  manifestHashes,
  type RunMemo,
  runMemo,
} from '../shared/checkpoint-codec.js';
import { CHECKPOINT_FIELDS } from '../shared/known-fields.js';
import type { NewCheckpoint, Scope } from '../types.js';
import { checksSession, ownSessionSelect } from './attach.js';
import { conflict, notFound, nowIso, type SqlContext, type WrittenCheckpoint } from './context.js';
import type { SqlExecutor, SqlParam, SqlRow } from './executor.js';
import { toJson } from './rows.js';

export const CHECKPOINT_COLUMNS =
  'id, tenant_id, user_id, run_id, session_id, task_id, step, parent_id, label, manifest, metadata, created_at';

export type CheckedCheckpoint = Omit<Checkpoint, 'id' | 'tenant_id' | 'user_id' | 'created_at'> & {
  readonly id: string | null;
};

export function checkNewCheckpoint(ctx: SqlContext, input: NewCheckpoint, path: string): CheckedCheckpoint {
  const { v } = ctx;
  v.record(input, path, CHECKPOINT_FIELDS);
  // The fast check passes what the guard passes; only a refusal runs the guard, for its error and path.
  // No copy: the channels are serialized inside this call, and the checkpoint returned holds the caller's own.
  const channels = isPlainJsonObject(input.channels)
    ? (input.channels as JsonObject)
    : v.jsonObject(input.channels, 'checkpoint.channels');
  return {
    id: v.optionalId(input.id, 'checkpoint', `${path}.id`),
    run_id: v.name(input.run_id, `${path}.run_id`),
    session_id: v.optionalId(input.session_id, 'session', `${path}.session_id`),
    task_id: v.optionalId(input.task_id, 'task', `${path}.task_id`),
    step: v.nonNegativeInt(input.step, `${path}.step`),
    parent_id: v.optionalId(input.parent_id, 'checkpoint', `${path}.parent_id`),
    label: input.label === undefined ? '' : v.text(input.label, `${path}.label`),
    channels,
    metadata: input.metadata === undefined ? {} : v.jsonObject(input.metadata, 'checkpoint.metadata'),
  };
}

/** The key of a run in `ctx.lastCheckpoints` and the codec's memos. */
export function checkpointRunKey(scope: Scope, run_id: string): string {
  return JSON.stringify([scope.tenant_id, scope.user_id, run_id]);
}

/**
 * What a one-statement put is encoded against: the run's last checkpoint as this store wrote it; null for
 * a checkpoint with no parent that the store knows nothing of (it starts its run's chain, the runtime's first
 * of a fresh run: encoded whole, with no manifest to read; whole is correct whatever the run holds, appends
 * only save space); undefined when the previous manifest must be read.
 */
export function knownLast(
  ctx: SqlContext,
  runKey: string,
  input: CheckedCheckpoint,
): WrittenCheckpoint | null | undefined {
  return ctx.lastCheckpoints.get(runKey) ?? (input.parent_id === null ? null : undefined);
}

/**
 * Stores a checkpoint: inside the caller's transaction, or with `oneStatement` (PostgreSQL, outside a
 * transaction) as one statement that writes its blobs and its row together, so a put is two round trips.
 * Either way the previous manifest only chooses what to store as an append: a manifest written against
 * an older one is still whole, since every blob it names is stored before or with it.
 *
 * With `oneStatement`, a run's next checkpoint written by the same store is one round trip: it is encoded
 * against the manifest this store wrote last in the run (`ctx.lastCheckpoints`), and its one statement
 * stores it only if that checkpoint still exists (so do the blobs it names: blobs are only ever removed
 * with the checkpoints that need them) and its id is free. A checkpoint with no parent, when the store
 * knows none of its run, is one round trip too, stored whole. Otherwise nothing is written and the put
 * goes the long way, reading the run's last manifest.
 */
export async function insertCheckpoint(
  ctx: SqlContext,
  tx: SqlExecutor,
  scope: Scope,
  input: CheckedCheckpoint,
  oneStatement = false,
  /** Given when `tx` is not a transaction: runs the long way of a put that names a session in one. */
  transaction?: <T>(fn: (tx: SqlExecutor) => Promise<T>) => Promise<T>,
  /** Remember what the long way wrote (in `ctx.lastCheckpoints`) as a one-statement put does. */
  remember = oneStatement,
): Promise<Checkpoint> {
  const runKey = checkpointRunKey(scope, input.run_id);
  const memo = runMemo(runKey);
  const last = oneStatement ? knownLast(ctx, runKey, input) : undefined;
  if (last !== undefined) {
    const written = await insertAfterKnown(ctx, tx, scope, input, last, memo);
    if (written !== null) {
      ctx.lastCheckpoints.set(runKey, { id: written.checkpoint.id, manifest: written.manifest });
      return written.checkpoint;
    }
    ctx.lastCheckpoints.delete(runKey);
  }
  // A session to check outside a transaction (PostgreSQL's single statements): the long way runs in one.
  if (transaction !== undefined && checksSession(ctx, input.session_id)) {
    return transaction((t) => insertCheckpoint(ctx, t, scope, input, false, undefined, oneStatement));
  }
  // One statement: the previous manifest of the run, whether the caller's id is taken, and whether the
  // session it names (if any) is a live one of the user's (attach.ts; in the caller's transaction).
  const session = checksSession(ctx, input.session_id)
    ? ownSessionSelect(ctx, scope, input.session_id)
    : null;
  const found = await tx.get(
    `SELECT (SELECT manifest FROM checkpoints WHERE tenant_id = ? AND user_id = ? AND run_id = ? ORDER BY ord DESC LIMIT 1) AS manifest,
      (SELECT 1 FROM checkpoints WHERE id = ?) AS taken${session === null ? '' : `, (${session.sql}) AS session_ok`}`,
    [scope.tenant_id, scope.user_id, input.run_id, input.id ?? '', ...(session?.params ?? [])],
  );
  if (input.id !== null && found?.taken !== null && found?.taken !== undefined) {
    throw conflict(ctx, 'checkpoint', input.id);
  }
  if (session !== null && (found?.session_ok === null || found?.session_ok === undefined)) {
    throw notFound(ctx, 'session', input.session_id as string);
  }
  const previous = found?.manifest;
  const before =
    previous === null || previous === undefined ? null : (JSON.parse(String(previous)) as Manifest);
  const { manifest, blobs } = encodeChannels(input.channels, before, memo);
  const blobParams = blobParamsOf(scope, input.run_id, blobs);
  const insertBlobs = `INSERT INTO checkpoint_blobs (${BLOB_COLUMNS}) VALUES ${blobs.map(() => BLOB_PLACEHOLDERS).join(', ')}
    ON CONFLICT (tenant_id, user_id, run_id, hash) DO NOTHING`;
  if (blobs.length > 0 && !oneStatement) await tx.run(insertBlobs, blobParams);
  const checkpoint = newCheckpoint(ctx, scope, input);
  const row = rowParams(checkpoint, manifest);
  const insertRow = `INSERT INTO checkpoints (${CHECKPOINT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;
  if (blobs.length > 0 && oneStatement) {
    // A data-modifying WITH runs whether or not the main statement reads it: both inserts or neither.
    await tx.run(`WITH blobs AS (${insertBlobs}) ${insertRow}`, [...blobParams, ...row]);
  } else {
    await tx.run(insertRow, row);
  }
  if (remember) ctx.lastCheckpoints.set(runKey, { id: checkpoint.id, manifest });
  return checkpoint;
}

const BLOB_COLUMNS = 'tenant_id, user_id, run_id, hash, base, data';
const BLOB_PLACEHOLDERS = '(?, ?, ?, ?, ?, ?)';

function blobParamsOf(scope: Scope, run_id: string, blobs: readonly BlobRow[]): SqlParam[] {
  const params: SqlParam[] = [];
  for (const blob of blobs)
    params.push(scope.tenant_id, scope.user_id, run_id, blob.hash, blob.base, blob.data);
  return params;
}

function newCheckpoint(ctx: SqlContext, scope: Scope, input: CheckedCheckpoint): Checkpoint {
  return {
    ...input,
    id: input.id ?? newId('checkpoint', ctx.random),
    tenant_id: scope.tenant_id,
    user_id: scope.user_id,
    created_at: nowIso(ctx),
  };
}

function rowParams(checkpoint: Checkpoint, manifest: Manifest): SqlParam[] {
  return [
    checkpoint.id,
    checkpoint.tenant_id,
    checkpoint.user_id,
    checkpoint.run_id,
    checkpoint.session_id,
    checkpoint.task_id,
    checkpoint.step,
    checkpoint.parent_id,
    checkpoint.label,
    JSON.stringify(manifest),
    toJson(checkpoint.metadata),
    checkpoint.created_at,
  ];
}

/**
 * PostgreSQL's one round trip for a checkpoint: blobs and row, encoded against `last` (whole when null),
 * stored only while `last` still exists and the new id is free. `ctes` (a guard `ok` and the blobs'
 * insert) open a WITH; `insert` stores the row, and nothing when the guard fails. Both read the same
 * condition in one snapshot, so they happen together or not at all.
 */
export function checkpointAfterKnown(
  ctx: SqlContext,
  scope: Scope,
  input: CheckedCheckpoint,
  last: WrittenCheckpoint | null,
  memo: RunMemo,
  /** The session the same statement updates (see ownSessionSelect). */
  lockedHere: string | null = null,
) {
  const { manifest, blobs } = encodeChannels(input.channels, last?.manifest ?? null, memo);
  const checkpoint = newCheckpoint(ctx, scope, input);
  // The session it names (if any) must be a live one of the user's (attach.ts).
  const session = checksSession(ctx, input.session_id)
    ? ownSessionSelect(ctx, scope, input.session_id, lockedHere)
    : null;
  const free = `NOT EXISTS (SELECT 1 FROM checkpoints WHERE id = ?)${session === null ? '' : ` AND EXISTS (${session.sql})`}`;
  const guard =
    last === null
      ? `ok AS (SELECT 1 AS one WHERE ${free})`
      : `ok AS (SELECT 1 AS one WHERE EXISTS (SELECT 1 FROM checkpoints WHERE id = ? AND tenant_id = ? AND user_id = ? AND run_id = ?)
      AND ${free})`;
  const freeParams: SqlParam[] = [checkpoint.id, ...(session?.params ?? [])];
  const guardParams: SqlParam[] =
    last === null ? freeParams : [last.id, scope.tenant_id, scope.user_id, input.run_id, ...freeParams];
  const insertBlobs =
    blobs.length === 0
      ? ''
      : `, blobs AS (INSERT INTO checkpoint_blobs (${BLOB_COLUMNS})
      SELECT v.* FROM (VALUES ${blobs.map(() => BLOB_PLACEHOLDERS).join(', ')}) AS v(${BLOB_COLUMNS})
      WHERE EXISTS (SELECT 1 FROM ok) ON CONFLICT (tenant_id, user_id, run_id, hash) DO NOTHING)`;
  return {
    checkpoint,
    manifest,
    ctes: `${guard}${insertBlobs}`,
    cteParams: [...guardParams, ...blobParamsOf(scope, input.run_id, blobs)],
    insert: `INSERT INTO checkpoints (${CHECKPOINT_COLUMNS})
      SELECT ?, ?, ?, ?, ?, ?, CAST(? AS INTEGER), ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM ok)`,
    insertParams: rowParams(checkpoint, manifest),
  };
}

/** `checkpointAfterKnown` as a statement of its own; null when nothing was stored. */
async function insertAfterKnown(
  ctx: SqlContext,
  tx: SqlExecutor,
  scope: Scope,
  input: CheckedCheckpoint,
  last: WrittenCheckpoint | null,
  memo: RunMemo,
): Promise<{ checkpoint: Checkpoint; manifest: Manifest } | null> {
  const put = checkpointAfterKnown(ctx, scope, input, last, memo);
  const inserted = await tx.run(`WITH ${put.ctes} ${put.insert}`, [...put.cteParams, ...put.insertParams]);
  return inserted === 1 ? { checkpoint: put.checkpoint, manifest: put.manifest } : null;
}

/** Every blob that the given hashes need, following `base` links, of one (tenant, user, run). */
export async function chainBlobs(q: SqlExecutor, owner: readonly [string, string, string], hashes: string[]) {
  const blobs = new Map<string, BlobRow>();
  if (hashes.length === 0) return blobs;
  const marks = hashes.map(() => '?').join(', ');
  const rows = await q.all(
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

/** Rebuilds the checkpoints of `rows` (one read: one decoder per owner, each blob parsed once). */
export async function decodeCheckpoints(q: SqlExecutor, rows: SqlRow[]): Promise<Checkpoint[]> {
  const decoders = new Map<string, ChannelDecoder>();
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
    decoders.set(key, new ChannelDecoder(await chainBlobs(q, group.owner, [...group.hashes])));
  }
  return rows.map((row, i) => {
    const key = JSON.stringify([String(row.tenant_id), String(row.user_id), String(row.run_id)]);
    const decoder = decoders.get(key) as ChannelDecoder;
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
      channels: decoder.decode(manifests[i] as Manifest) as JsonObject,
      metadata: JSON.parse(String(row.metadata)) as JsonObject,
      created_at: String(row.created_at),
    };
  });
}
