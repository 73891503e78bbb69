/** Session and message rows of the SQL driver. */
import type { Session } from '../../core/model.js';
import { Checks } from '../core/checks.js';
import type { DriverTx, Listed } from '../core/driver.js';
import type { ReadScope } from '../types.js';
import { scopeCheck, scopeWhere } from './context.js';
import { LIMIT_PARAM, type SqlParam } from './executor.js';
import { MESSAGES, SESSIONS } from './rows.js';
import type { SqlTxEnv } from './tx-env.js';

type SessionRows = Pick<
  DriverTx,
  | 'getSession'
  | 'listSessions'
  | 'insertSession'
  | 'replaceSession'
  | 'deleteSession'
  | 'messageCount'
  | 'listMessages'
  | 'lastMessages'
  | 'appendMessages'
>;

/** Rows per INSERT when appending messages: bounds the statement variants and their parameters. */
const INSERT_ROWS = 50;
/** Sessions kept elsewhere: read there; this database stores none of them nor their messages. */
function elsewhere(read: (scope: ReadScope, id: string) => Promise<Session | null>): SessionRows {
  const refuse = async (): Promise<never> => {
    throw new Error('the sessions of this store live in another one: this database stores none');
  };
  return {
    getSession: read,
    listSessions: refuse,
    insertSession: refuse,
    replaceSession: refuse,
    deleteSession: refuse,
    messageCount: refuse,
    listMessages: refuse,
    lastMessages: refuse,
    appendMessages: refuse,
  };
}

const SESSION_SET = SESSIONS.assign(
  'agent status context version ttl_seconds updated_at last_activity_at expires_at ended_at lineage'.split(
    ' ',
  ),
);
const UPDATE_SESSION = `UPDATE sessions SET ${SESSION_SET.sql}, kept_until = ?, message_count = message_count + ?
  WHERE id = ? AND version = ? AND expires_at = ? AND COALESCE(kept_until, '') = ?`;

function updateParams(next: Session, added: number, previous: Session): SqlParam[] {
  const { id, version, expires_at, retained_until } = previous;
  return [
    ...SESSION_SET.params(next),
    next.retained_until ?? null,
    added,
    id,
    version,
    expires_at,
    retained_until ?? '',
  ];
}

const HOLD_KNOWN_SESSION = `SELECT 1 FROM sessions WHERE id = ? AND version = ? AND created_at = ?
  AND expires_at = ? AND message_count = ? AND COALESCE(kept_until, '') = ? FOR SHARE`;

export function sessionRows(env: SqlTxEnv): SessionRows {
  const { q, counts, sessionLock, sessions, seen, deferred, pendingSessions, known } = env;
  if (sessions !== undefined) return elsewhere(sessions);
  return {
    async getSession(scope, id) {
      const had = seen?.get(id);
      if (had !== undefined) return Checks.inScope(scope, had) ? had : null;
      const stored = known?.rows.sessions.get(id);
      if (stored !== undefined && seen !== null && deferred !== null && known !== null) {
        // Optimistic: as this store last saw it, held unchanged (its message count too) with the writes.
        const { session, messageCount } = stored;
        known.touched.sessions.add(id);
        if (!Checks.inScope(scope, session)) return null;
        counts.set(id, { stored: messageCount, added: 0 });
        seen.set(id, session);
        // Held apart from a write of the session, whose guard checks less.
        deferred.hold(`known-session:${id}`, HOLD_KNOWN_SESSION, [
          id,
          session.version,
          session.created_at,
          session.expires_at,
          messageCount,
          session.retained_until ?? '',
        ]);
        return session;
      }
      const where = scopeCheck(scope);
      const row = await q.get(
        `SELECT ${SESSIONS.columns}, message_count FROM sessions WHERE id = ? AND ${where.sql}${sessionLock}`,
        [id, ...where.params],
      );
      if (row === undefined) return null;
      const session = SESSIONS.decode(row);
      known?.touched.sessions.add(id);
      // Only a write transaction keeps what it read (reads outside one share their rows).
      if (seen !== null) {
        if (!counts.has(id)) counts.set(id, { stored: Number(row.message_count), added: 0 });
        seen.set(id, session);
        // Optimistic: what was read must still be so when the writes land (and stays so until then).
        deferred?.hold(
          `session:${id}`,
          'SELECT 1 FROM sessions WHERE id = ? AND version = ? AND expires_at = ? FOR SHARE',
          [id, session.version, session.expires_at],
        );
      }
      return session;
    },
    async listSessions(scope, filter, page) {
      const where = scopeWhere(scope);
      const conditions = [where.sql, 'expires_at > ?'];
      const params: SqlParam[] = [...where.params, filter.liveAt];
      if (filter.status !== undefined) {
        conditions.push('status = ?');
        params.push(filter.status);
      }
      if (typeof page.after === 'number') {
        conditions.push('ord < ?');
        params.push(page.after);
      }
      const rows = await q.all(
        `SELECT ord, ${SESSIONS.columns} FROM sessions WHERE ${conditions.join(' AND ')} ORDER BY ord DESC ${LIMIT_PARAM}`,
        [...params, page.limit],
      );
      return rows.map((row): Listed<Session> => ({ rec: SESSIONS.decode(row), pos: Number(row.ord) }));
    },
    async insertSession(s) {
      const changed = await q.run(
        `INSERT INTO sessions (${SESSIONS.columns}, kept_until, message_count) VALUES (${'?, '.repeat(15)}0) ON CONFLICT (id) DO NOTHING`,
        [...SESSIONS.params(s), s.retained_until ?? null],
      );
      if (changed === 1) {
        counts.set(s.id, { stored: 0, added: 0 });
        seen?.set(s.id, s);
      }
      return changed === 1;
    },
    async replaceSession(next, previous) {
      // Messages appended in this transaction are counted with the same statement.
      const count = counts.get(next.id);
      const added = count?.added ?? 0;
      let changed: number;
      if (deferred === null) {
        changed = await q.run(UPDATE_SESSION, updateParams(next, added, previous));
      } else {
        // Kept: a session written twice is written once, against the row as first read.
        const pending = pendingSessions.get(next.id) ?? { previous, added: 0 };
        pending.added += added;
        pendingSessions.set(next.id, pending);
        deferred.write(
          `session:${next.id}`,
          UPDATE_SESSION,
          updateParams(next, pending.added, pending.previous),
        );
        changed = 1;
      }
      if (changed === 1 && count !== undefined)
        counts.set(next.id, { stored: count.stored + added, added: 0 });
      if (changed === 1) seen?.set(next.id, next);
      else seen?.delete(next.id);
      return changed === 1;
    },
    async deleteSession(session) {
      await q.run('DELETE FROM messages WHERE tenant_id = ? AND session_id = ?', [
        session.tenant_id,
        session.id,
      ]);
      await q.run('DELETE FROM sessions WHERE id = ?', [session.id]);
      counts.delete(session.id);
      seen?.delete(session.id);
      known?.touched.sessions.add(session.id);
    },
    async messageCount(session) {
      let count = counts.get(session.id);
      if (count === undefined) {
        const row = await q.get('SELECT message_count FROM sessions WHERE id = ?', [session.id]);
        count = { stored: Number(row?.message_count ?? 0), added: 0 };
        // Reads share their rows across calls: only a write transaction keeps the count it read.
        if (seen !== null) counts.set(session.id, count);
      }
      return count.stored + count.added;
    },
    async listMessages(session, after_seq, limit) {
      const rows = await q.all(
        `SELECT ${MESSAGES.columns} FROM messages WHERE tenant_id = ? AND session_id = ? AND seq > ? ORDER BY seq ${LIMIT_PARAM}`,
        [session.tenant_id, session.id, after_seq, limit],
      );
      return rows.map(MESSAGES.decode);
    },
    async lastMessages(session, n) {
      const rows = await q.all(
        `SELECT ${MESSAGES.columns} FROM messages WHERE tenant_id = ? AND session_id = ? ORDER BY seq DESC ${LIMIT_PARAM}`,
        [session.tenant_id, session.id, n],
      );
      return rows.map(MESSAGES.decode).reverse();
    },
    async appendMessages(session, messages) {
      for (let start = 0; start < messages.length; start += INSERT_ROWS) {
        const chunk = messages.slice(start, start + INSERT_ROWS);
        await q.run(
          `INSERT INTO messages (${MESSAGES.columns}) VALUES ${chunk.map(() => MESSAGES.placeholders).join(', ')}`,
          chunk.flatMap(MESSAGES.params),
        );
      }
      const count = counts.get(session.id) ?? { stored: 0, added: 0 };
      if (!counts.has(session.id)) {
        const row = await q.get('SELECT message_count FROM sessions WHERE id = ?', [session.id]);
        count.stored = Number(row?.message_count ?? 0);
      }
      counts.set(session.id, { stored: count.stored, added: count.added + messages.length });
    },
  };
}
