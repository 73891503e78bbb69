/**
 * Checkpoints. The memory store keeps each checkpoint's channels as one JSON text beside its record (the
 * record's own `channels` is an empty placeholder): written once per put, parsed once per read, so every
 * read hands out a fresh copy. Durable stores use the checkpoint codec instead. A per-run index (rows in
 * write order) spares latest and list a scan of every checkpoint; it is checked against the table on each
 * use, so rows removed elsewhere (retention, a rolled-back turn) are skipped. "Newest" means most recently
 * written, whatever the clock says.
 */

import { isoAt } from '../../core/clock.js';
import { AgentStateError } from '../../core/errors.js';
import { newId } from '../../core/ids.js';
import type { JsonObject } from '../../core/json.js';
import { isPlainJsonObject } from '../../core/json.js';
import type { Checkpoint } from '../../core/model.js';
import { checkpointPageStart } from '../shared/checkpoint-query.js';
import { CHECKPOINT_FIELDS } from '../shared/known-fields.js';
import type { CheckpointQuery, NewCheckpoint, Page, ReadScope, Scope } from '../types.js';
import type { Ctx, Row } from './db.js';
import { requireOwnSession } from './sessions.js';
import {
  ADAPTER,
  checkId,
  checkReadScope,
  checkScope,
  fail,
  inScope,
  jsonObject,
  limit,
  name,
  nonNegativeInt,
  optionalId,
  record,
  text,
} from './validate.js';

export type CheckedCheckpoint = Omit<Checkpoint, 'id' | 'tenant_id' | 'user_id' | 'created_at'> & {
  readonly id: string | null;
};

export function checkNewCheckpoint(input: NewCheckpoint, path: string): CheckedCheckpoint {
  record(input, path, CHECKPOINT_FIELDS);
  // The fast check passes what the guard passes; only a refusal runs the guard, for its error and path.
  const channels = isPlainJsonObject(input.channels)
    ? (input.channels as JsonObject)
    : jsonObject(input.channels, 'checkpoint.channels');
  return {
    id: optionalId(input.id, 'checkpoint', `${path}.id`),
    run_id: name(input.run_id, `${path}.run_id`),
    session_id: optionalId(input.session_id, 'session', `${path}.session_id`),
    task_id: optionalId(input.task_id, 'task', `${path}.task_id`),
    step: nonNegativeInt(input.step, `${path}.step`),
    parent_id: optionalId(input.parent_id, 'checkpoint', `${path}.parent_id`),
    label: input.label === undefined ? '' : text(input.label, `${path}.label`),
    channels,
    metadata: input.metadata === undefined ? {} : jsonObject(input.metadata, 'checkpoint.metadata'),
  };
}

type Stored = Row<Checkpoint>;

/** The JSON text of each stored record's channels. */
const channelsJson = new WeakMap<Checkpoint, string>();
const PLACEHOLDER: JsonObject = Object.freeze({}) as JsonObject;

/** Rows by run id, in write order, per checkpoint table; `rows` counts them, removed ones included. */
interface RunIndex {
  readonly byRun: Map<string, Stored[]>;
  rows: number;
}
const indexes = new WeakMap<Map<string, Stored>, RunIndex>();

/**
 * The table's index, built from the table when absent or when it holds many rows removed elsewhere
 * (retention), so removed checkpoints are not kept alive by it.
 */
function runIndex(c: Ctx): RunIndex {
  let index = indexes.get(c.t.checkpoints);
  if (index === undefined || index.rows > 2 * c.t.checkpoints.size + 64) {
    index = { byRun: new Map(), rows: c.t.checkpoints.size };
    const rows = [...c.t.checkpoints.values()].sort((a, b) => a.seq - b.seq);
    for (const row of rows) {
      const list = index.byRun.get(row.rec.run_id);
      if (list === undefined) index.byRun.set(row.rec.run_id, [row]);
      else list.push(row);
    }
    indexes.set(c.t.checkpoints, index);
  }
  return index;
}

/** A stored record as the caller gets it: its own copy of every value. */
function output(rec: Checkpoint): Checkpoint {
  const json = channelsJson.get(rec);
  return {
    ...rec,
    channels: json === undefined ? structuredClone(rec.channels) : (JSON.parse(json) as JsonObject),
    metadata: structuredClone(rec.metadata),
  };
}

/** Stores the checkpoint; returns it with the caller's channels (the stored ones are a JSON text). */
export function insertCheckpoint(c: Ctx, scope: Scope, input: CheckedCheckpoint): Checkpoint {
  const id = input.id ?? newId('checkpoint', c.random);
  if (c.t.checkpoints.has(id)) {
    throw new AgentStateError('conflict', `[${ADAPTER}] checkpoint ${id} already exists`, {
      details: { id },
    });
  }
  requireOwnSession(c, scope, input.session_id);
  const checkpoint: Checkpoint = {
    ...input,
    id,
    tenant_id: scope.tenant_id,
    user_id: scope.user_id,
    created_at: isoAt(c.now),
  };
  const rec: Checkpoint = { ...checkpoint, channels: PLACEHOLDER, metadata: structuredClone(input.metadata) };
  channelsJson.set(rec, JSON.stringify(input.channels));
  const row: Stored = { seq: c.nextSeq(), rec };
  const index = runIndex(c);
  c.tx.set(c.t.checkpoints, id, row);
  const list = index.byRun.get(rec.run_id);
  if (list === undefined) index.byRun.set(rec.run_id, [row]);
  else list.push(row);
  index.rows++;
  return checkpoint;
}

export function putCheckpoint(c: Ctx, scope: Scope, input: NewCheckpoint): Checkpoint {
  checkScope(scope);
  return insertCheckpoint(c, scope, checkNewCheckpoint(input, 'checkpoint'));
}

export function getCheckpoint(c: Ctx, scope: ReadScope, id: string): Checkpoint | null {
  checkReadScope(scope);
  checkId(id, 'checkpoint', 'checkpoint id');
  const row = c.t.checkpoints.get(id);
  return row !== undefined && inScope(scope, row.rec) ? output(row.rec) : null;
}

/** The run's rows still in the table, oldest first; drops the index's rows removed elsewhere. */
function runRows(c: Ctx, run_id: string): Stored[] {
  const index = runIndex(c);
  const list = index.byRun.get(run_id);
  if (list === undefined) return [];
  const live = list.filter((row) => c.t.checkpoints.get(row.rec.id) === row);
  if (live.length !== list.length) {
    index.rows -= list.length - live.length;
    if (live.length === 0) index.byRun.delete(run_id);
    else index.byRun.set(run_id, live);
  }
  return live;
}

/** The run's checkpoints in scope, newest first. */
function history(c: Ctx, scope: ReadScope, run_id: string): Stored[] {
  return runRows(c, run_id)
    .filter(({ rec }) => inScope(scope, rec))
    .reverse();
}

export function latestCheckpoint(c: Ctx, scope: ReadScope, run_id: string): Checkpoint | null {
  checkReadScope(scope);
  name(run_id, 'run_id');
  const rows = runRows(c, run_id);
  for (let i = rows.length - 1; i >= 0; i--) {
    const rec = (rows[i] as Stored).rec;
    if (inScope(scope, rec)) return output(rec);
  }
  return null;
}

/** Newest first; `before` (a checkpoint id, or the previous page's next_cursor) pages back through history. */
export function listCheckpoints(
  c: Ctx,
  scope: ReadScope,
  run_id: string,
  query: CheckpointQuery = {},
): Page<Checkpoint> {
  checkReadScope(scope);
  name(run_id, 'run_id');
  record(query, 'query');
  const n = limit(query.limit, 'limit', 20, 500);
  let rows = history(c, scope, run_id);
  const start = checkpointPageStart(query, fail);
  if (start !== null) {
    const before = checkId(start, 'checkpoint', 'before');
    const at = rows.findIndex((row) => row.rec.id === before);
    rows = at === -1 ? [] : rows.slice(at + 1);
  }
  const items = rows.slice(0, n);
  const last = items.at(-1);
  return {
    items: items.map((row) => output(row.rec)),
    next_cursor: rows.length > n && last !== undefined ? last.rec.id : null,
  };
}

export function pruneCheckpoints(c: Ctx, scope: ReadScope, run_id: string, keep: number): number {
  checkReadScope(scope);
  name(run_id, 'run_id');
  nonNegativeInt(keep, 'keep');
  const doomed = history(c, scope, run_id).slice(keep);
  for (const row of doomed) c.tx.delete(c.t.checkpoints, row.rec.id);
  runRows(c, run_id);
  return doomed.length;
}
