/**
 * Messages: a gap-free seq per session, kept as `message_count` on the session row and advanced by the
 * same transaction that inserts the messages (the row update serializes concurrent appenders, also across
 * processes). Appending renews the session's TTL, not its version.
 */

import { newId } from '../../core/ids.js';
import {
  MESSAGE_ROLES,
  type Message,
  OPEN_TASK_STATES,
  type Session,
  type ToolCall,
} from '../../core/model.js';
import { runIdFor } from '../../core/run-id.js';
import {
  MESSAGE_FIELDS,
  SESSION_HEAD_FIELDS,
  TOOL_CALL_FIELDS,
  unknownField,
  unknownFieldMessage,
} from '../shared/known-fields.js';
import { checkNextRunOption, composeNextRun } from '../shared/next-run.js';
import {
  MAX_PAGE_LIMIT,
  type MessageQuery,
  type NewMessage,
  type ReadScope,
  type SessionHead,
  type SessionHeadOptions,
} from '../types.js';
import { readCheckpoint } from './checkpoint-reads.js';
import { isoAfter, notFound, nowIso, type SqlContext, scopeCheck, scopeWhere } from './context.js';
import type { SqlExecutor, SqlParam, SqlRow } from './executor.js';
import { LIMIT_PARAM } from './executor.js';
import {
  MESSAGE_COLUMNS,
  SESSION_COLUMNS,
  TASK_COLUMNS,
  toJson,
  toMessage,
  toSession,
  toTask,
} from './rows.js';
import { OPEN_TASK_STATES_SQL } from './schema.js';
import { listTaskRows } from './tasks.js';

export const MAX_MESSAGE_LIMIT = 1000;

export type CheckedMessage = Omit<
  Message,
  'id' | 'tenant_id' | 'user_id' | 'session_id' | 'seq' | 'created_at'
>;

function checkToolCalls(ctx: SqlContext, value: unknown, path: string): ToolCall[] | null {
  const { v } = ctx;
  if (value === undefined || value === null) return null;
  if (!Array.isArray(value)) v.fail(`${path} must be an array or null`);
  return (value as unknown[]).map((call: unknown, i) => {
    v.record(call, `${path}[${i}]`);
    const extra = unknownField(call as object, TOOL_CALL_FIELDS);
    if (extra !== null) v.fail(unknownFieldMessage(`${path}[${i}]`, extra, TOOL_CALL_FIELDS));
    const { id, name, arguments: args } = call as ToolCall;
    return {
      id: v.name(id, `${path}[${i}].id`),
      name: v.name(name, `${path}[${i}].name`),
      arguments: v.json(args, `${path}[${i}].arguments`),
    };
  });
}

export function checkMessages(ctx: SqlContext, items: readonly NewMessage[], path: string): CheckedMessage[] {
  const { v } = ctx;
  if (!Array.isArray(items)) v.fail(`${path} must be an array of messages`);
  return items.map((item: NewMessage, i) => {
    const at = `${path}[${i}]`;
    v.record(item, at);
    const extra = unknownField(item, MESSAGE_FIELDS);
    if (extra !== null) v.fail(unknownFieldMessage(at, extra, MESSAGE_FIELDS));
    return {
      role: v.oneOf(item.role, MESSAGE_ROLES, `${at}.role`),
      content: v.text(item.content, `${at}.content`),
      name: item.name === undefined || item.name === null ? null : v.name(item.name, `${at}.name`),
      tool_calls: checkToolCalls(ctx, item.tool_calls, `${at}.tool_calls`),
      tool_call_id:
        item.tool_call_id === undefined || item.tool_call_id === null
          ? null
          : v.name(item.tool_call_id, `${at}.tool_call_id`),
      metadata: item.metadata === undefined ? {} : v.jsonObject(item.metadata, `${at}.metadata`),
    };
  });
}

/** Rows per INSERT when appending messages: bounds the statement variants and their parameters. */
const INSERT_ROWS = 50;
const MESSAGE_PLACEHOLDERS = `(${'?, '.repeat(11)}?)`;

/**
 * Appends checked messages to a live session: one UPDATE that counts them, renews its TTL and returns the
 * session (a second renews the TTL of a session whose TTL is not the default), and the rows in multi-row
 * INSERTs. Answers the messages and the session as it now is.
 */
export async function appendChecked(
  ctx: SqlContext,
  tx: SqlExecutor,
  scope: ReadScope,
  session_id: string,
  items: readonly CheckedMessage[],
): Promise<{ messages: Message[]; session: Session | null }> {
  const where = scopeCheck(scope);
  const now = nowIso(ctx);
  if (items.length === 0) {
    const live = await tx.get(
      `SELECT 1 AS one FROM sessions WHERE id = ? AND ${where.sql} AND expires_at > ?`,
      [session_id, ...where.params, now],
    );
    if (live === undefined) throw notFound(ctx, 'session', session_id);
    return { messages: [], session: null };
  }
  // The TTL renewal rides on the same UPDATE for a session of the default TTL (most are); another TTL,
  // known only from the row, takes a second UPDATE.
  const usual = ctx.defaultSessionTtlSeconds;
  const usualExpiry = isoAfter(ctx, usual * 1000);
  const rows = await tx.all(
    `UPDATE sessions SET message_count = message_count + ?, last_activity_at = ?,
        expires_at = CASE WHEN ttl_seconds = ? THEN ? ELSE expires_at END
      WHERE id = ? AND ${where.sql} AND expires_at > ? RETURNING message_count, ${SESSION_COLUMNS}`,
    [items.length, now, usual, usualExpiry, session_id, ...where.params, now],
  );
  const row = rows[0];
  if (row === undefined) throw notFound(ctx, 'session', session_id);
  let expires_at = usualExpiry;
  if (Number(row.ttl_seconds) !== usual) {
    expires_at = isoAfter(ctx, Number(row.ttl_seconds) * 1000);
    await tx.run('UPDATE sessions SET expires_at = ? WHERE id = ?', [expires_at, session_id]);
  }
  const session = toSession({ ...row, expires_at });
  const first = Number(row.message_count) - items.length + 1;
  const out: Message[] = items.map((item, i) => ({
    id: newId('message', ctx.random),
    tenant_id: scope.tenant_id,
    user_id: session.user_id,
    session_id,
    seq: first + i,
    ...item,
    created_at: now,
  }));
  for (let start = 0; start < out.length; start += INSERT_ROWS) {
    const chunk = out.slice(start, start + INSERT_ROWS);
    await tx.run(
      `INSERT INTO messages (${MESSAGE_COLUMNS}) VALUES ${chunk.map(() => MESSAGE_PLACEHOLDERS).join(', ')}`,
      chunk.flatMap((message) => [
        message.id,
        message.tenant_id,
        message.user_id,
        message.session_id,
        message.seq,
        message.role,
        message.content,
        message.name,
        message.tool_calls === null ? null : toJson(message.tool_calls),
        message.tool_call_id,
        toJson(message.metadata),
        message.created_at,
      ]),
    );
  }
  return { messages: out, session };
}

/** Messages of a visible session only: the join makes scope and expiry part of the query. */
function visibleFrom(scope: ReadScope) {
  const where = scopeCheck(scope, 's.');
  return {
    sql: `FROM messages m JOIN sessions s ON s.id = m.session_id AND s.tenant_id = m.tenant_id
      WHERE m.tenant_id = ? AND m.session_id = ? AND ${where.sql} AND s.expires_at > ?`,
    params: where.params,
  };
}

const COLUMNS = MESSAGE_COLUMNS.split(', ')
  .map((column) => `m.${column}`)
  .join(', ');

export async function selectMessages(
  ctx: SqlContext,
  q: SqlExecutor,
  scope: ReadScope,
  session_id: string,
  query: MessageQuery,
) {
  const { v } = ctx;
  v.record(query, 'query');
  const after = query.after_seq === undefined ? 0 : v.nonNegativeInt(query.after_seq, 'after_seq');
  const limit = v.limit(query.limit, 'limit', 100, MAX_MESSAGE_LIMIT);
  const from = visibleFrom(scope);
  const rows = await q.all(`SELECT ${COLUMNS} ${from.sql} AND m.seq > ? ORDER BY m.seq ${LIMIT_PARAM}`, [
    scope.tenant_id,
    session_id,
    ...from.params,
    nowIso(ctx),
    after,
    limit,
  ]);
  return rows.map(toMessage);
}

export async function selectLastMessages(
  ctx: SqlContext,
  q: SqlExecutor,
  scope: ReadScope,
  id: string,
  n: number,
) {
  const count = ctx.v.limit(n, 'n', 1, MAX_MESSAGE_LIMIT);
  const from = visibleFrom(scope);
  const rows = await q.all(`SELECT ${COLUMNS} ${from.sql} ORDER BY m.seq DESC ${LIMIT_PARAM}`, [
    scope.tenant_id,
    id,
    ...from.params,
    nowIso(ctx),
    count,
  ]);
  return rows.map(toMessage).reverse();
}

const HEAD_SESSION_COLUMNS = SESSION_COLUMNS.split(', ')
  .map((column) => `s.${column}`)
  .join(', ');
const HEAD_MESSAGE_COLUMNS = MESSAGE_COLUMNS.split(', ')
  .map((column) => `m.${column} AS m_${column}`)
  .join(', ');

/** What getSessionHead reads besides the head: how many open tasks (null: none), and the next run or not. */
export interface HeadReads {
  readonly openTasks: number | null;
  readonly nextRun: boolean;
}

/** `options` of getSessionHead checked. */
export function checkSessionHeadOptions(ctx: SqlContext, options: SessionHeadOptions): HeadReads {
  const { v } = ctx;
  v.record(options, 'options', SESSION_HEAD_FIELDS);
  const nextRun = checkNextRunOption(options.next_run, `[${ctx.adapter}] `);
  if (options.open_tasks === undefined) return { openTasks: null, nextRun };
  const n = v.positiveInt(options.open_tasks, 'options.open_tasks');
  if (n > MAX_PAGE_LIMIT) v.fail(`options.open_tasks must be at most ${MAX_PAGE_LIMIT}`);
  return { openTasks: n, nextRun };
}

const BASE32 = "'abcdefghijklmnopqrstuvwxyz234567'";
const base32Char = (bits: string) => `substr(${BASE32}, (${bits})::int + 1, 1)`;
const chunkChars = (v: string) =>
  Array.from({ length: 8 }, (_, c) => base32Char(`(${v} >> ${35 - 5 * c}) & 31`)).join(' || ');

/**
 * PostgreSQL's runIdFor of the head's session and newest message (core/run-id.ts), as joins that give
 * `r.id`: `run_` and the base32 (RFC 4648 alphabet, lowercase, no padding) of the first 16 bytes of
 * sha256(session id, newline, seq). The 16 bytes are read as three 40-bit numbers (8 characters each) and a
 * last byte (2 characters, the second padded with zero bits): plain arithmetic, a few microseconds.
 */
export const NEXT_RUN_ID_JOINS = `
      CROSS JOIN LATERAL (SELECT substring(sha256(convert_to(s.id || chr(10) || COALESCE(m.seq, 0)::text, 'UTF8'))
        FROM 1 FOR 16) AS b) rh
      CROSS JOIN LATERAL (SELECT ('x' || encode(substring(rh.b FROM 1 FOR 5), 'hex'))::bit(40)::bigint AS v1,
        ('x' || encode(substring(rh.b FROM 6 FOR 5), 'hex'))::bit(40)::bigint AS v2,
        ('x' || encode(substring(rh.b FROM 11 FOR 5), 'hex'))::bit(40)::bigint AS v3,
        get_byte(rh.b, 15) AS v4) rv
      CROSS JOIN LATERAL (SELECT 'run_' || ${chunkChars('rv.v1')} || ${chunkChars('rv.v2')} || ${chunkChars('rv.v3')}
        || ${base32Char('(rv.v4 >> 3) & 31')} || ${base32Char('(rv.v4 & 7) << 2')} AS id) r`;

/**
 * The session's newest message. PostgreSQL: a lateral read of one index entry from the end of the session's
 * messages (a join on `seq = MAX(seq)` was planned as a hash of all of them: a read that grew with the
 * conversation, 10 ms at 20,000 messages). SQLite has no LATERAL and plans the join on MAX(seq) as two
 * index lookups.
 */
const NEWEST_MESSAGE_LATERAL = `LEFT JOIN LATERAL (SELECT ${MESSAGE_COLUMNS} FROM messages
        WHERE tenant_id = s.tenant_id AND session_id = s.id ORDER BY seq DESC LIMIT 1) m ON true`;
const NEWEST_MESSAGE_JOIN = `LEFT JOIN messages m ON m.tenant_id = s.tenant_id AND m.session_id = s.id
        AND m.seq = (SELECT MAX(x.seq) FROM messages x WHERE x.tenant_id = s.tenant_id AND x.session_id = s.id)`;

/**
 * The session and its newest message in one statement (the newest by the primary key's seq); with
 * `openTasks`, the scope's open tasks too: on PostgreSQL in the same statement (a JSON list), on SQLite
 * (in-process, no round trip to save) by a second one.
 */
export async function selectSessionHead(
  ctx: SqlContext,
  q: SqlExecutor,
  scope: ReadScope,
  id: string,
  reads: HeadReads = { openTasks: null, nextRun: false },
): Promise<SessionHead | null> {
  const { openTasks } = reads;
  const where = scopeCheck(scope, 's.');
  const params: SqlParam[] = [];
  let openColumn = '';
  if (openTasks !== null && ctx.adapter === 'postgres') {
    const tasksWhere = scopeWhere(scope);
    openColumn = `, (SELECT json_agg(x ORDER BY x.ord DESC) FROM (SELECT ord, ${TASK_COLUMNS} FROM tasks
      WHERE ${tasksWhere.sql} AND ${OPEN_TASK_STATES_SQL} ORDER BY ord DESC LIMIT ?) x) AS open_tasks`;
    params.push(...tasksWhere.params, openTasks);
  }
  // The next run on PostgreSQL: its id computed from the row, the label of its newest checkpoint joined.
  const nextRunInStatement = reads.nextRun && ctx.adapter === 'postgres';
  let nextRunColumns = '';
  let nextRunJoins = '';
  if (nextRunInStatement) {
    const checkpointsWhere = scopeWhere(scope, 'c.');
    nextRunColumns = ', r.id AS next_run_id, cl.label AS next_run_label';
    nextRunJoins = `${NEXT_RUN_ID_JOINS}
      LEFT JOIN LATERAL (SELECT c.label FROM checkpoints c WHERE ${checkpointsWhere.sql} AND c.run_id = r.id
        ORDER BY c.ord DESC LIMIT 1) cl ON true`;
    params.push(...checkpointsWhere.params);
  }
  const row = await q.get(
    `SELECT ${HEAD_SESSION_COLUMNS}, ${HEAD_MESSAGE_COLUMNS}${openColumn}${nextRunColumns} FROM sessions s
      ${ctx.adapter === 'postgres' ? NEWEST_MESSAGE_LATERAL : NEWEST_MESSAGE_JOIN}${nextRunJoins}
      WHERE s.id = ? AND ${where.sql} AND s.expires_at > ?`,
    [...params, id, ...where.params, nowIso(ctx)],
  );
  if (row === undefined) return null;
  let message: Message | null = null;
  if (row.m_id !== null && row.m_id !== undefined) {
    const fields: SqlRow = {};
    for (const column of MESSAGE_COLUMNS.split(', ')) fields[column] = row[`m_${column}`];
    message = toMessage(fields);
  }
  let head: SessionHead = { session: toSession(row), last_message: message };
  if (openColumn !== '') {
    const listed = Array.isArray(row.open_tasks) ? (row.open_tasks as SqlRow[]) : [];
    head = { ...head, open_tasks: listed.map(toTask) };
  } else if (openTasks !== null) {
    const page = await listTaskRows(ctx, q, scope, { state: OPEN_TASK_STATES, limit: openTasks });
    head = { ...head, open_tasks: page.items };
  }
  if (!reads.nextRun) return head;
  const lastSeq = message?.seq ?? 0;
  // The id computed in SQL is checked against runIdFor's; should they ever differ, the run is looked up by it.
  const next =
    nextRunInStatement && row.next_run_id === runIdFor(id, lastSeq)
      ? {
          id: row.next_run_id,
          checkpoint_label: row.next_run_label === null ? null : String(row.next_run_label),
        }
      : await composeNextRun(id, lastSeq, (run) => readCheckpoint(q, scope, { run_id: run }));
  return { ...head, next_run: next };
}
