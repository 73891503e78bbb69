/** Checkpoints: a run's history of named channels; "newest" means most recently written. */
import { isoAt } from '../../core/clock.js';
import { newId } from '../../core/ids.js';
import { cloneJson, isPlainJsonObject, type JsonObject } from '../../core/json.js';
import type { Checkpoint } from '../../core/model.js';
import { checkpointPageStart } from '../shared/checkpoint-query.js';
import { CHECKPOINT_FIELDS } from '../shared/known-fields.js';
import type { CheckpointQuery, NewCheckpoint, Page, ReadScope, Scope } from '../types.js';
import { type CoreEnv, conflict, type Op, type WriteOp } from './context.js';
import { requireOwnSession } from './sessions.js';

export type CheckedCheckpoint = Omit<Checkpoint, 'id' | 'tenant_id' | 'user_id' | 'created_at'> & {
  readonly id: string | null;
};

export function checkNewCheckpoint(env: CoreEnv, input: NewCheckpoint, path: string): CheckedCheckpoint {
  const { v } = env;
  v.record(input, path, CHECKPOINT_FIELDS);
  // The fast check passes what the guard passes; only a refusal runs the guard, for its error and path.
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
    metadata:
      input.metadata === undefined
        ? {}
        : isPlainJsonObject(input.metadata)
          ? cloneJson(input.metadata as JsonObject)
          : v.jsonObject(input.metadata, 'checkpoint.metadata'),
  };
}

/** Stores the checkpoint; returns it with the caller's own channels. */
export async function insertCheckpoint(
  op: WriteOp,
  scope: Scope,
  input: CheckedCheckpoint,
): Promise<Checkpoint> {
  await requireOwnSession(op, scope, input.session_id);
  const checkpoint: Checkpoint = {
    ...input,
    id: input.id ?? newId('checkpoint', op.env.random),
    tenant_id: scope.tenant_id,
    user_id: scope.user_id,
    created_at: isoAt(op.now),
  };
  if (!(await op.tx.insertCheckpoint(checkpoint))) throw conflict(op.env, 'checkpoint', checkpoint.id);
  return checkpoint;
}

export function checkCheckpointQuery(
  env: CoreEnv,
  query: CheckpointQuery,
): { before: string | null; limit: number } {
  const { v } = env;
  v.record(query, 'query');
  const limit = v.limit(query.limit, 'limit', 20, 500);
  const start = checkpointPageStart(query, (message) => v.fail(message));
  return { before: start === null ? null : v.id(start, 'checkpoint', 'before'), limit };
}

/** Newest first; `before` (a checkpoint id, or the previous page's next_cursor) pages back through history. */
export async function listCheckpoints(
  op: Op,
  scope: ReadScope,
  run_id: string,
  page: { before: string | null; limit: number },
): Promise<Page<Checkpoint>> {
  const rows = await op.tx.listCheckpoints(scope, run_id, { before: page.before, limit: page.limit + 1 });
  const items = rows.slice(0, page.limit);
  const last = items.at(-1);
  return { items, next_cursor: rows.length > page.limit && last !== undefined ? last.id : null };
}

export async function pruneCheckpoints(
  op: WriteOp,
  scope: ReadScope,
  run_id: string,
  keep: number,
): Promise<number> {
  const doomed: string[] = [];
  let before: string | null = null;
  let kept = 0;
  // Walk the history newest first: the first `keep` stay, the rest go.
  for (;;) {
    const rows: Checkpoint[] = await op.tx.listCheckpoints(scope, run_id, { before, limit: 500 });
    for (const row of rows) {
      if (kept < keep) kept++;
      else doomed.push(row.id);
    }
    const last = rows.at(-1);
    if (rows.length < 500 || last === undefined) break;
    before = last.id;
  }
  if (doomed.length > 0) await op.tx.deleteCheckpoints(scope, run_id, doomed);
  return doomed.length;
}
