/**
 * PostgreSQL: a turn's commit as one statement. A turn commits a session patch, tasks created and updated,
 * actions begun and completed, its messages and a checkpoint; as a transaction that is BEGIN, a statement
 * or two per part and COMMIT: 6 round trips for a turn that fills a slot, 11 for one that books. Here it is
 * one: data-modifying WITH clauses (the checkpoint's blobs and row, each task's insert or update with its
 * event, each action's insert or completion, the session's patch and count with the messages, each memory
 * item's upsert, the lease it frees), and a main query that divides by the product of what each wrote (one row each; the lease, not
 * counted, may be gone already). When any wrote nothing (a stale
 * version, a refused move, an expired session, an id or key already there, a task or action missing, a
 * previous checkpoint gone), the division by zero fails the statement,
 * PostgreSQL undoes all of it, and the caller runs the transaction, which writes the turn or says exactly
 * why not. So does a batch this statement does not take: no checkpoint, a part whose row another part of
 * the same batch writes, a session patch without messages or of another session, more than MAX_MESSAGES.
 */
import { newId } from '../../core/ids.js';
import {
  type Action,
  type Message,
  OPEN_TASK_STATES,
  SESSION_STATUSES,
  SESSION_TRANSITIONS,
  type Session,
  type Task,
} from '../../core/model.js';
import { runMemo } from '../shared/checkpoint-codec.js';
import type { Scope, TurnResult } from '../types.js';
import { newActionInsert } from './actions.js';
import { checksSession, ownSessionSelect } from './attach.js';
import { checkpointAfterKnown, checkpointRunKey, knownLast } from './checkpoints.js';
import { isoAfter, nowIso, type SqlContext, scopeCheck, scopeWhere } from './context.js';
import type { SqlExecutor, SqlParam, SqlRow } from './executor.js';
import { memoryUpsert, withCreatedAt } from './memory.js';
import {
  ACTION_COLUMNS,
  EVENT_COLUMNS,
  MESSAGE_COLUMNS,
  SESSION_COLUMNS,
  TASK_COLUMNS,
  toAction,
  toJson,
  toSession,
  toTask,
} from './rows.js';
import { OPEN_TASK_STATES_SQL } from './schema.js';
import { eventParams, newTaskRow, taskPatchUpdate } from './tasks.js';
import type { CheckedBatch } from './turn.js';

/** Messages per turn this statement takes (one VALUES list); more go through the transaction. */
const MAX_MESSAGES = 50;

/**
 * SQLSTATEs on which the transaction runs instead: the guard (division by zero), a key or id already there
 * (unique violation: the transaction finds the existing action, or says which id is taken), and the
 * conflicts a transaction retries (serialization failure, deadlock).
 */
const FALL_BACK_CODES = new Set(['22012', '23505', '40001', '40P01']);

function prefixed(columns: string, prefix: string, alias = ''): string {
  return columns
    .split(', ')
    .map((column) => `${alias}${column} AS ${prefix}${column}`)
    .join(', ');
}

function unprefixed(row: SqlRow, columns: string, prefix: string): SqlRow {
  const out: SqlRow = {};
  for (const column of columns.split(', ')) out[column] = row[`${prefix}${column}`];
  return out;
}

function distinct(values: readonly string[]): boolean {
  return new Set(values).size === values.length;
}

/**
 * True when the batch has a shape this statement writes: a checkpoint; up to MAX_MESSAGES messages, or none
 * and then no session patch; a session patch only of the messages' session; and no row written by two parts
 * (all of them see one snapshot, so a task created here could not be updated or given an action here, nor
 * an action begun here be completed).
 */
function fits(b: CheckedBatch): boolean {
  if (b.checkpoint === null) return false;
  if (b.messages === null) {
    if (b.session !== null) return false;
  } else {
    const n = b.messages.items.length;
    if (n === 0 || n > MAX_MESSAGES) return false;
    if (b.session !== null && b.session.id !== b.messages.session_id) return false;
  }
  const created = b.creates.map((t) => t.id).filter((id): id is string => id !== null);
  const updated = b.updates.map((u) => u.id);
  const begun = b.begins.map((a) => a.id).filter((id): id is string => id !== null);
  const completed = b.completes.map((c) => c.id);
  return (
    distinct([...created, ...updated]) &&
    distinct([...begun, ...completed]) &&
    distinct(b.begins.map((a) => a.idempotency_key)) &&
    b.begins.every((a) => !created.includes(a.task_id))
  );
}

/**
 * Writes the batch in one statement; null when it has another shape or a guard refused it (nothing was
 * written), and the caller runs the transaction instead.
 */
export async function writeTurnInOneStatement(
  ctx: SqlContext,
  q: SqlExecutor,
  scope: Scope,
  b: CheckedBatch,
): Promise<TurnResult | null> {
  if (!fits(b) || b.checkpoint === null) return null;
  const runKey = checkpointRunKey(scope, b.checkpoint.run_id);
  const last = knownLast(ctx, runKey, b.checkpoint);
  if (last === undefined) return null;
  const now = nowIso(ctx);
  const where = scopeWhere(scope);
  const ctes: string[] = [];
  const params: SqlParam[] = [];
  /** The WITH clauses that must each write one row, and those whose row the main query returns. */
  const counted: string[] = [];
  const returned: string[] = [];

  // The session whose row the statement updates (messages): its row is locked by that UPDATE already.
  const lockedHere = b.messages?.session_id ?? null;
  const put = checkpointAfterKnown(ctx, scope, b.checkpoint, last, runMemo(runKey), lockedHere);
  ctes.push(put.ctes, `cp AS (${put.insert} RETURNING 1 AS one)`);
  params.push(...put.cteParams, ...put.insertParams);
  counted.push('cp');

  const created: Task[] = [];
  b.creates.forEach((input, i) => {
    const { task, params: row } = newTaskRow(ctx, scope, input, now);
    created.push(task);
    ctes.push(
      `tc${i} AS (INSERT INTO tasks (${TASK_COLUMNS}) VALUES (${row.map(() => '?').join(', ')}) RETURNING 1 AS one)`,
      `tce${i} AS (INSERT INTO task_events (${EVENT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?))`,
    );
    params.push(...row, ...eventParams(ctx, task, null, 'created'));
    counted.push(`tc${i}`);
  });

  // Each session a created task names must be a live one of the user's (attach.ts): a guard that finds
  // its row, or the statement fails (the checkpoint's and the begun actions' guard their own rows).
  const attached = [...new Set(b.creates.map((input) => input.session_id))].filter((id) =>
    checksSession(ctx, id),
  );
  attached.forEach((session_id, i) => {
    const select = ownSessionSelect(ctx, scope, session_id as string, lockedHere);
    ctes.push(`sg${i} AS (${select.sql})`);
    params.push(...select.params);
    counted.push(`sg${i}`);
  });

  b.updates.forEach((update, i) => {
    const patched = taskPatchUpdate(
      ctx,
      scope,
      update.id,
      update.expected,
      update.patch,
      now,
      `${prefixed(TASK_COLUMNS, `tu${i}_`, 't.')}, o.old_state AS tu${i}_old_state, t.ord AS tu${i}_ord`,
      lockedHere,
    );
    ctes.push(`tu${i} AS (${patched.sql})`);
    params.push(...patched.params);
    counted.push(`tu${i}`);
    returned.push(`tu${i}`);
    if (update.patch.state !== undefined) {
      const p = `tu${i}_`;
      ctes.push(`tue${i} AS (INSERT INTO task_events (${EVENT_COLUMNS})
        SELECT ?, ${p}tenant_id, ${p}user_id, ${p}id, ${p}old_state, ${p}state, ?, ${p}version, ? FROM tu${i}
        WHERE ${p}old_state <> ${p}state)`);
      params.push(newId('event', ctx.random), update.patch.cause, now);
    }
  });

  const begun: Action[] = [];
  b.begins.forEach((input, i) => {
    const insert = newActionInsert(ctx, scope, input, now, lockedHere);
    begun.push(insert.action);
    ctes.push(`ab${i} AS (${insert.sql} RETURNING 1 AS one)`);
    params.push(...insert.params);
    counted.push(`ab${i}`);
  });

  // Actions by id: the scope as a check no index serves (context.ts scopeCheck).
  const byId = scopeCheck(scope);
  b.completes.forEach(({ id, done }, i) => {
    ctes.push(`ac${i} AS (UPDATE actions SET status = ?, result = ?, error = ?, updated_at = ?, completed_at = ?
      WHERE id = ? AND ${byId.sql} AND status = 'PENDING' RETURNING ${prefixed(ACTION_COLUMNS, `ac${i}_`)})`);
    params.push(
      done.status,
      done.result === null ? null : toJson(done.result),
      done.error === null ? null : toJson(done.error),
      now,
      now,
      id,
      ...byId.params,
    );
    counted.push(`ac${i}`);
    returned.push(`ac${i}`);
  });

  const appended = b.messages === null ? null : sessionAndMessages(ctx, scope, b, b.messages, now);
  if (appended !== null) {
    ctes.push(...appended.ctes);
    params.push(...appended.params);
    counted.push('s');
    returned.push('s');
  }

  // Memory items: an upsert each (one row each, whatever was there), counted so that a row not written
  // sends the batch to the transaction.
  const memory = b.memory.map((input, i) => {
    const upsert = memoryUpsert(ctx, scope, input, `mp${i}_created_at`);
    ctes.push(`mp${i} AS (${upsert.sql})`);
    params.push(...upsert.params);
    counted.push(`mp${i}`);
    returned.push(`mp${i}`);
    return upsert.item;
  });

  // The lease the batch frees (its owner's only): no guard, a lease not held is no reason to refuse the turn.
  let releasedColumn = '';
  if (b.release !== null) {
    ctes.push(`rl AS (DELETE FROM leases WHERE tenant_id = ? AND user_id = ? AND name = ? AND owner = ?
      AND expires_at > ? RETURNING 1 AS one)`);
    params.push(scope.tenant_id, scope.user_id, b.release.name, b.release.owner, now);
    releasedColumn = ', (SELECT COUNT(*) FROM rl) AS lease_released';
  }

  // The session's open tasks as the statement's snapshot has them (before its own writes, which
  // openTasksOverlay lays over them): as many more as the batch updates, since each may leave the list.
  let openColumn = '';
  if (b.listOpen !== null) {
    openColumn = `, (SELECT json_agg(x ORDER BY x.ord DESC) FROM (SELECT ord, ${TASK_COLUMNS} FROM tasks
      WHERE ${where.sql} AND session_id = ? AND ${OPEN_TASK_STATES_SQL} ORDER BY ord DESC LIMIT ?) x) AS open_tasks`;
    params.push(...where.params, b.listOpen.session_id, b.listOpen.limit + b.updates.length);
  }

  const guard = counted.map((name) => `(SELECT COUNT(*) FROM ${name})`).join(' * ');
  const joined = returned.map((name) => ` LEFT JOIN ${name} ON TRUE`).join('');
  let row: SqlRow | undefined;
  try {
    row = await q.get(
      `WITH ${ctes.join(', ')}
      SELECT * FROM (SELECT 1 / (${guard}) AS passed${releasedColumn}${openColumn}) AS g${joined}`,
      params,
    );
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    if (typeof code === 'string' && FALL_BACK_CODES.has(code)) return null;
    throw error;
  }
  if (row === undefined) return null;
  ctx.lastCheckpoints.set(runKey, { id: put.checkpoint.id, manifest: put.manifest });
  let session: Session | null = null;
  let messages: Message[] = [];
  if (appended !== null) {
    session = toSession(unprefixed(row, SESSION_COLUMNS, 's_'));
    const owner = session.user_id;
    const first = Number(row.s_message_count) - appended.items.length + 1;
    messages = appended.items.map((item, i) => ({
      id: appended.ids[i] as string,
      tenant_id: scope.tenant_id,
      user_id: owner,
      session_id: appended.session_id,
      seq: first + i,
      ...item,
      created_at: now,
    }));
  }
  const written = row;
  const updated = b.updates.map((_, i) => ({
    task: toTask(unprefixed(written, TASK_COLUMNS, `tu${i}_`)),
    ord: Number(written[`tu${i}_ord`]),
  }));
  const open =
    b.listOpen === null
      ? {}
      : {
          open_tasks: openTasksOverlay(
            row.open_tasks,
            created,
            updated,
            b.listOpen.session_id,
            b.listOpen.limit,
          ),
        };
  return {
    session,
    tasks: [...created, ...updated.map((u) => u.task)],
    actions: [
      ...begun,
      ...b.completes.map((_, i) => toAction(unprefixed(written, ACTION_COLUMNS, `ac${i}_`))),
    ],
    messages,
    checkpoint: put.checkpoint,
    ...(b.putMemory
      ? { memory: memory.map((item, i) => withCreatedAt(item, written[`mp${i}_created_at`])) }
      : {}),
    ...(b.release === null ? {} : { lease_released: Number(row.lease_released) > 0 }),
    ...open,
  };
}

/**
 * A session's open tasks after the batch, from the snapshot's list (`listed`: JSON rows with `ord`, newest
 * first, read before the batch's writes) and what the batch wrote: an updated task takes its new copy's place,
 * or leaves the list when it is no longer open or no longer the session's, or joins it at its `ord` when it
 * now is; the tasks it created are the newest of all. Newest first, at most `limit`.
 */
function openTasksOverlay(
  listed: unknown,
  created: readonly Task[],
  updated: readonly { task: Task; ord: number }[],
  sessionId: string,
  limit: number,
): Task[] {
  const rows = Array.isArray(listed) ? (listed as SqlRow[]) : [];
  const byId = new Map<string, { task: Task; ord: number }>();
  for (const row of rows) byId.set(String(row.id), { task: toTask(row), ord: Number(row.ord) });
  const open = (task: Task) => task.session_id === sessionId && OPEN_TASK_STATES.includes(task.state);
  for (const u of updated) {
    if (open(u.task)) byId.set(u.task.id, u);
    else byId.delete(u.task.id);
  }
  const listedNow = [...byId.values()].sort((a, b) => b.ord - a.ord).map((entry) => entry.task);
  const createdNow = created.filter(open).reverse();
  return [...createdNow, ...listedNow].slice(0, limit);
}

/**
 * The session's patch (if any), its count of messages and its TTL, in one UPDATE `s` (a row is written once
 * per statement), and the messages' INSERT `m`, numbered from the count it returns.
 */
function sessionAndMessages(
  ctx: SqlContext,
  scope: Scope,
  b: CheckedBatch,
  appended: NonNullable<CheckedBatch['messages']>,
  now: string,
) {
  const { session_id, items } = appended;
  const where = scopeCheck(scope);
  const patch = b.session?.patch ?? {};
  const sets = ['message_count = message_count + ?', 'last_activity_at = ?'];
  const setParams: SqlParam[] = [items.length, now];
  if (patch.ttl_seconds !== undefined) {
    sets.push('expires_at = ?');
    setParams.push(isoAfter(ctx, patch.ttl_seconds * 1000));
  } else {
    // The default TTL's expiry as the transaction computes it; another TTL's, known only from the row, in
    // the same ISO-8601 form (milliseconds, UTC, 'Z').
    const usual = ctx.defaultSessionTtlSeconds;
    sets.push(`expires_at = CASE WHEN ttl_seconds = ? THEN ? ELSE to_char(
        (CAST(? AS TIMESTAMPTZ) + ttl_seconds * INTERVAL '1 second') AT TIME ZONE 'UTC',
        'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') END`);
    setParams.push(usual, isoAfter(ctx, usual * 1000), now);
  }
  const conditions = [`id = ? AND ${where.sql} AND expires_at > ?`];
  const conditionParams: SqlParam[] = [session_id, ...where.params, now];
  if (b.session !== null) {
    sets.push('version = version + 1', 'updated_at = ?');
    setParams.push(now);
    conditions.push('version = ?');
    conditionParams.push(b.session.expected);
    const to = patch.status;
    if (to !== undefined) {
      const from = SESSION_STATUSES.filter((s) => s === to || SESSION_TRANSITIONS[s].includes(to));
      sets.push('status = ?');
      setParams.push(to);
      if (to === 'ended') {
        sets.push(`ended_at = CASE WHEN status = 'ended' THEN ended_at ELSE ? END`);
        setParams.push(now);
      }
      conditions.push(`status IN (${from.map(() => '?').join(', ')})`);
      conditionParams.push(...from);
    }
    if (patch.context !== undefined) {
      sets.push('context = ?');
      setParams.push(toJson(patch.context));
    }
    if (patch.agent !== undefined) {
      sets.push('agent = ?');
      setParams.push(patch.agent);
    }
    if (patch.ttl_seconds !== undefined) {
      sets.push('ttl_seconds = ?');
      setParams.push(patch.ttl_seconds);
    }
  }
  const ids = items.map(() => newId('message', ctx.random));
  const values = items.map(() => '(CAST(? AS INTEGER), ?, ?, ?, ?, ?, ?, ?)').join(', ');
  const params: SqlParam[] = [...setParams, ...conditionParams, scope.tenant_id, items.length, now];
  items.forEach((item, i) => {
    params.push(
      i + 1,
      ids[i] as string,
      item.role,
      item.content,
      item.name,
      item.tool_calls === null ? null : toJson(item.tool_calls),
      item.tool_call_id,
      toJson(item.metadata),
    );
  });
  return {
    session_id,
    items,
    ids,
    params,
    ctes: [
      `s AS (UPDATE sessions SET ${sets.join(', ')} WHERE ${conditions.join(' AND ')}
      RETURNING message_count AS s_message_count, ${prefixed(SESSION_COLUMNS, 's_')})`,
      `m AS (INSERT INTO messages (${MESSAGE_COLUMNS})
      SELECT v.id, ?, s_user_id, s_id, s_message_count - ? + v.k, v.role, v.content, v.name, v.tool_calls,
        v.tool_call_id, v.metadata, ? FROM s
      CROSS JOIN (VALUES ${values}) AS v(k, id, role, content, name, tool_calls, tool_call_id, metadata))`,
    ],
  };
}
