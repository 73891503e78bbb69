/**
 * Run event rows of the SQL driver. An append is one INSERT ... SELECT that numbers its rows after the
 * run's last stored seq, so it needs no read of its own and an optimistic attempt keeps it as it keeps any
 * write (the primary key refuses a seq a concurrent append took).
 */
import type { JsonObject } from '../../core/json.js';
import type { RunEventType } from '../../core/model.js';
import type { DriverTx, RunEventRow } from '../core/driver.js';
import { LIMIT_PARAM, type SqlParam } from './executor.js';
import type { SqlTxEnv } from './tx-env.js';

type EventRows = Pick<DriverTx, 'listRunEvents' | 'appendRunEvents'>;

const COLUMNS = 'tenant_id, user_id, session_id, run_id, seq, type, data, created_at, expires_at';

export function eventRows({ q }: SqlTxEnv): EventRows {
  return {
    async listRunEvents(scope, { session_id, run_id, after_seq, limit }) {
      const user = scope.user_id === undefined ? '' : ' AND user_id = ?';
      const params: SqlParam[] = [scope.tenant_id, session_id, run_id, after_seq];
      if (scope.user_id !== undefined) params.push(scope.user_id);
      const rows = await q.all(
        `SELECT ${COLUMNS} FROM run_events WHERE tenant_id = ? AND session_id = ? AND run_id = ? AND seq > ?${user}
          ORDER BY seq ${LIMIT_PARAM}`,
        [...params, limit],
      );
      return rows.map(
        (row): RunEventRow => ({
          tenant_id: String(row.tenant_id),
          user_id: String(row.user_id),
          session_id: String(row.session_id),
          run_id: String(row.run_id),
          seq: Number(row.seq),
          type: String(row.type) as RunEventType,
          data: JSON.parse(String(row.data)) as JsonObject,
          created_at: String(row.created_at),
          expires_at: String(row.expires_at),
        }),
      );
    },
    async appendRunEvents(rows) {
      const first = rows[0];
      if (first === undefined) return;
      const values = rows.map((_, i) =>
        i === 0 ? 'SELECT 1 AS ord, ? AS type, ? AS data' : `SELECT ${i + 1}, ?, ?`,
      );
      const params: SqlParam[] = [
        first.tenant_id,
        first.user_id,
        first.session_id,
        first.run_id,
        first.created_at,
        first.expires_at,
        first.tenant_id,
        first.session_id,
        first.run_id,
      ];
      for (const row of rows) params.push(row.type, JSON.stringify(row.data));
      await q.run(
        `INSERT INTO run_events (${COLUMNS})
          SELECT ?, ?, ?, ?, last.n + v.ord, v.type, v.data, ?, ?
          FROM (SELECT coalesce(max(seq), 0) AS n FROM run_events WHERE tenant_id = ? AND session_id = ? AND run_id = ?) last,
            (${values.join(' UNION ALL ')}) v`,
        params,
      );
    },
  };
}
