/**
 * Checkpoints. The memory store keeps channels directly (deep-copied in and out); durable stores use the
 * checkpoint codec. "Newest" means most recently written, whatever the clock says.
 */
import { isoAt } from '../../core/clock.js';
import { AgentStateError } from '../../core/errors.js';
import { newId } from '../../core/ids.js';
import type { JsonObject } from '../../core/json.js';
import type { Checkpoint } from '../../core/model.js';
import type { CheckpointQuery, NewCheckpoint, Page, ReadScope, Scope } from '../types.js';
import { type Ctx, copy, type Row } from './db.js';
import {
  ADAPTER,
  checkId,
  checkReadScope,
  checkScope,
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
  record(input, path);
  const channels: JsonObject = jsonObject(input.channels, 'checkpoint.channels');
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

export function insertCheckpoint(c: Ctx, scope: Scope, input: CheckedCheckpoint): Checkpoint {
  const id = input.id ?? newId('checkpoint', c.random);
  if (c.t.checkpoints.has(id)) {
    throw new AgentStateError('conflict', `[${ADAPTER}] checkpoint ${id} already exists`, {
      details: { id },
    });
  }
  const checkpoint: Checkpoint = {
    ...input,
    id,
    tenant_id: scope.tenant_id,
    user_id: scope.user_id,
    created_at: isoAt(c.now),
  };
  c.tx.set(c.t.checkpoints, id, { seq: c.nextSeq(), rec: checkpoint });
  return checkpoint;
}

export function putCheckpoint(c: Ctx, scope: Scope, input: NewCheckpoint): Checkpoint {
  checkScope(scope);
  return copy(insertCheckpoint(c, scope, checkNewCheckpoint(input, 'checkpoint')));
}

export function getCheckpoint(c: Ctx, scope: ReadScope, id: string): Checkpoint | null {
  checkReadScope(scope);
  checkId(id, 'checkpoint', 'checkpoint id');
  const row = c.t.checkpoints.get(id);
  return row !== undefined && inScope(scope, row.rec) ? copy(row.rec) : null;
}

/** The run's checkpoints in scope, newest first. */
function history(c: Ctx, scope: ReadScope, run_id: string): Row<Checkpoint>[] {
  return [...c.t.checkpoints.values()]
    .filter(({ rec }) => rec.run_id === run_id && inScope(scope, rec))
    .sort((a, b) => b.seq - a.seq);
}

export function latestCheckpoint(c: Ctx, scope: ReadScope, run_id: string): Checkpoint | null {
  checkReadScope(scope);
  name(run_id, 'run_id');
  const newest = history(c, scope, run_id)[0];
  return newest === undefined ? null : copy(newest.rec);
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
  if (query.before !== undefined && query.before !== null) {
    const before = checkId(query.before, 'checkpoint', 'before');
    const at = rows.findIndex((row) => row.rec.id === before);
    rows = at === -1 ? [] : rows.slice(at + 1);
  }
  const items = rows.slice(0, n);
  const last = items.at(-1);
  return {
    items: items.map((row) => copy(row.rec)),
    next_cursor: rows.length > n && last !== undefined ? last.rec.id : null,
  };
}

export function pruneCheckpoints(c: Ctx, scope: ReadScope, run_id: string, keep: number): number {
  checkReadScope(scope);
  name(run_id, 'run_id');
  nonNegativeInt(keep, 'keep');
  const doomed = history(c, scope, run_id).slice(keep);
  for (const row of doomed) c.tx.delete(c.t.checkpoints, row.rec.id);
  return doomed.length;
}
