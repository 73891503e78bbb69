/**
 * PostgreSQL's session head in one statement: the session, its newest message (a lateral read of one index
 * entry from the end of the session's messages), the scope's open tasks as a JSON list, and the session's
 * next run with the label of its newest checkpoint. The fast path of the core's getSessionHead.
 */
import type { Message, Session, Task } from '../../core/model.js';
import { runIdFor } from '../../core/run-id.js';
import type { HeadReads } from '../core/driver.js';
import type { ReadScope, Scope, SessionHead } from '../types.js';
import { scopeCheck, scopeWhere } from './context.js';
import type { SqlExecutor, SqlParam, SqlRow } from './executor.js';
import { MESSAGES, SESSIONS, TASKS } from './rows.js';
import { OPEN_TASK_STATES_SQL } from './schema.js';

const HEAD_SESSION_COLUMNS = SESSIONS.names.map((column) => `s.${column}`).join(', ');
const HEAD_MESSAGE_COLUMNS = MESSAGES.names.map((column) => `m.${column} AS m_${column}`).join(', ');

const BASE32 = "'abcdefghijklmnopqrstuvwxyz234567'";
const base32Char = (bits: string) => `substr(${BASE32}, (${bits})::int + 1, 1)`;
const chunkChars = (v: string) =>
  Array.from({ length: 8 }, (_, c) => base32Char(`(${v} >> ${35 - 5 * c}) & 31`)).join(' || ');

/**
 * runIdFor (core/run-id.ts) of the head's session and newest message, as joins that give `r.id`: `run_` and
 * the base32 (RFC 4648 alphabet, lowercase, no padding) of the first 16 bytes of sha256(session id, newline,
 * seq), read as three 40-bit numbers (8 characters each) and a last byte (2 characters).
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

/** The lease the head's statement takes (HeadLease, its expiry computed): PostgreSQL's one-statement turn start. */
export interface StatementLease {
  readonly scope: Scope;
  readonly name: string;
  readonly owner: string;
  readonly expires_at: string;
}

/** What the statement did with its lease: taken by its insert; `seen` when its snapshot held a lease row. */
export interface LeaseOutcome {
  readonly taken: boolean;
  readonly seen: boolean;
}

/**
 * The lease's insert, ahead of the head's reads in one statement: only for a session that is there, and
 * only when no lease row is (a held, expired or own lease goes through acquireLease). The reads see the
 * statement's snapshot: a lease row in it that the insert did not meet was freed meanwhile, by a commit the
 * reads may not see (`seen`: the caller reads the head again).
 */
function leaseClauses(lease: StatementLease, id: string, now: string) {
  const { tenant_id, user_id } = lease.scope;
  return {
    with: `WITH lease AS (INSERT INTO leases (tenant_id, user_id, name, owner, expires_at)
        SELECT ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM sessions WHERE id = ? AND tenant_id = ? AND user_id = ?
          AND expires_at > ?)
        ON CONFLICT DO NOTHING RETURNING 1 AS taken) `,
    withParams: [tenant_id, user_id, lease.name, lease.owner, lease.expires_at, id, tenant_id, user_id, now],
    columns: `, (SELECT count(*) FROM lease) AS lease_taken,
      EXISTS (SELECT 1 FROM leases WHERE tenant_id = ? AND user_id = ? AND name = ?) AS lease_seen`,
    columnParams: [tenant_id, user_id, lease.name],
  };
}

/** The head, or null when the session is not in scope or expired at `now`. */
export async function selectSessionHead(
  q: SqlExecutor,
  scope: ReadScope,
  id: string,
  reads: HeadReads,
  now: string,
  /** The newest checkpoint's label of a run, should the run id computed in SQL ever differ from runIdFor's. */
  labelOf: (run_id: string) => Promise<string | null>,
  /** Told what was read: the session, its message count, the open tasks listed and whether that is all. */
  seen?: (session: Session, messageCount: number, open: Task[], all: boolean) => void,
  /** Taken in the same statement, before the reads (told to `leased`). */
  lease?: { readonly take: StatementLease; readonly leased: (outcome: LeaseOutcome) => void },
): Promise<SessionHead | null> {
  const params: SqlParam[] = [];
  const leasing = lease === undefined ? null : leaseClauses(lease.take, id, now);
  if (leasing !== null) params.push(...leasing.withParams);
  let openColumn = '';
  if (reads.openTasks !== null) {
    const tasksWhere = scopeWhere(scope);
    openColumn = `, (SELECT json_agg(x ORDER BY x.ord DESC) FROM (SELECT ord, ${TASKS.columns} FROM tasks
      WHERE ${tasksWhere.sql} AND ${OPEN_TASK_STATES_SQL} ORDER BY ord DESC LIMIT ?) x) AS open_tasks`;
    params.push(...tasksWhere.params, reads.openTasks);
  }
  if (leasing !== null) {
    openColumn += leasing.columns;
    params.push(...leasing.columnParams);
  }
  let nextRunColumns = '';
  let nextRunJoins = '';
  if (reads.nextRun) {
    const checkpointsWhere = scopeWhere(scope, 'c.');
    nextRunColumns = ', r.id AS next_run_id, cl.label AS next_run_label';
    nextRunJoins = `${NEXT_RUN_ID_JOINS}
      LEFT JOIN LATERAL (SELECT c.label FROM checkpoints c WHERE ${checkpointsWhere.sql} AND c.run_id = r.id
        ORDER BY c.ord DESC LIMIT 1) cl ON true`;
    params.push(...checkpointsWhere.params);
  }
  const where = scopeCheck(scope, 's.');
  const row = await q.get(
    `${leasing?.with ?? ''}SELECT ${HEAD_SESSION_COLUMNS}, s.message_count AS head_message_count, ${HEAD_MESSAGE_COLUMNS}${openColumn}${nextRunColumns} FROM sessions s
      LEFT JOIN LATERAL (SELECT ${MESSAGES.columns} FROM messages
        WHERE tenant_id = s.tenant_id AND session_id = s.id ORDER BY seq DESC LIMIT 1) m ON true${nextRunJoins}
      WHERE s.id = ? AND ${where.sql} AND s.expires_at > ?`,
    [...params, id, ...where.params, now],
  );
  if (row === undefined) return null;
  lease?.leased({ taken: Number(row.lease_taken) > 0, seen: row.lease_seen === true });
  let message: Message | null = null;
  if (row.m_id !== null && row.m_id !== undefined) {
    const fields: SqlRow = {};
    for (const column of MESSAGES.names) fields[column] = row[`m_${column}`];
    message = MESSAGES.decode(fields);
  }
  let head: SessionHead = { session: SESSIONS.decode(row), last_message: message };
  let open: Task[] = [];
  if (reads.openTasks !== null) {
    const listed = Array.isArray(row.open_tasks) ? (row.open_tasks as SqlRow[]) : [];
    head = { ...head, open_tasks: listed.map(TASKS.decode) };
    open = listed.map(TASKS.decode);
  }
  const all = reads.openTasks !== null && open.length < reads.openTasks;
  seen?.(SESSIONS.decode(row), Number(row.head_message_count), open, all);
  if (!reads.nextRun) return head;
  const runId = runIdFor(id, message?.seq ?? 0);
  const label =
    row.next_run_id === runId
      ? row.next_run_label === null
        ? null
        : String(row.next_run_label)
      : await labelOf(runId);
  return { ...head, next_run: { id: runId, checkpoint_label: label } };
}
