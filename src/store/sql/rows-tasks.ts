/** Task, task event and action rows of the SQL driver. */

import type { Action, Task } from '../../core/model.js';
import { OPEN_TASK_STATES, type TaskState } from '../../core/model.js';
import { Checks } from '../core/checks.js';
import type { DriverTx, Listed, PageRequest, StoredTaskEvent } from '../core/driver.js';
import type { ReadScope } from '../types.js';
import { scopeCheck, scopeWhere } from './context.js';
import { LIMIT_PARAM, OptimisticMiss, type SqlExecutor, type SqlParam, type SqlRow } from './executor.js';
import {
  ACTION_COLUMNS,
  EVENT_COLUMNS,
  TASK_COLUMNS,
  toAction,
  toJson,
  toTask,
  toTaskEvent,
} from './rows.js';
import { OPEN_TASK_STATES_SQL } from './schema.js';
import type { SqlTxEnv } from './tx-env.js';

type TaskRows = Pick<
  DriverTx,
  | 'getTask'
  | 'listTasks'
  | 'listTaskEvents'
  | 'insertTask'
  | 'replaceTask'
  | 'addTaskEvent'
  | 'getAction'
  | 'getActionByKey'
  | 'listActions'
  | 'insertAction'
  | 'replaceAction'
>;

/** Whether two lists of states name the same set (the open states asked in any order, or twice). */
function sameStates(a: readonly TaskState[], b: readonly TaskState[]): boolean {
  const set = new Set(a);
  return set.size === new Set(b).size && b.every((state) => set.has(state));
}

/** A newest-first page of `table` in scope under `conditions`. */
async function page<T>(
  q: SqlExecutor,
  table: string,
  columns: string,
  scope: ReadScope,
  filters: [string, SqlParam[]][],
  at: PageRequest,
  map: (row: SqlRow) => T,
): Promise<Listed<T>[]> {
  const where = scopeWhere(scope);
  const conditions = [where.sql, ...filters.map(([sql]) => sql)];
  const params = [...where.params, ...filters.flatMap(([, p]) => p)];
  if (typeof at.after === 'number') {
    conditions.push('ord < ?');
    params.push(at.after);
  }
  const rows = await q.all(
    `SELECT ord, ${columns} FROM ${table} WHERE ${conditions.join(' AND ')} ORDER BY ord DESC ${LIMIT_PARAM}`,
    [...params, at.limit],
  );
  return rows.map((row) => ({ rec: map(row), pos: Number(row.ord) }));
}

const ACTION_VALUES = Array(17).fill('?').join(', ');

const UPDATE_TASK = `UPDATE tasks SET state = ?, slots = ?, status_line = ?, data = ?, session_id = ?, version = ?,
  updated_at = ?, closed_at = ? WHERE id = ? AND version = ?`;

function updateTaskParams(next: Task, previous: Task): SqlParam[] {
  return [
    next.state,
    toJson(next.slots),
    next.status_line,
    toJson(next.data),
    next.session_id,
    next.version,
    next.updated_at,
    next.closed_at,
    previous.id,
    previous.version,
  ];
}

export function taskRows({ q, deferred, kept }: SqlTxEnv): TaskRows {
  return {
    async getTask(scope, id) {
      const where = scopeCheck(scope);
      const sql = `SELECT ${TASK_COLUMNS} FROM tasks WHERE id = ? AND ${where.sql}`;
      if (deferred !== null) {
        // Optimistic: a task it wrote is read back from what it wrote; any other by its key.
        const own = kept.get(`task:${id}`);
        if (own?.kind === 'task') return Checks.inScope(scope, own.row) ? own.row : null;
        const row = await deferred.getRow(sql, [id, ...where.params]);
        return row === undefined ? null : toTask(row);
      }
      const row = await q.get(sql, [id, ...where.params]);
      return row === undefined ? null : toTask(row);
    },
    listTasks(scope, filter, at) {
      const filters: [string, SqlParam[]][] = [];
      if (filter.session_id !== undefined) filters.push(['session_id = ?', [filter.session_id]]);
      if (filter.type !== undefined) filters.push(['type = ?', [filter.type]]);
      const states = filter.states;
      if (states !== undefined) {
        // The open states as written in the open-task indexes' term, so those indexes serve the query.
        if (sameStates(states, OPEN_TASK_STATES)) filters.push([OPEN_TASK_STATES_SQL, []]);
        else filters.push([`state IN (${states.map(() => '?').join(', ')})`, [...states]]);
      }
      return page(q, 'tasks', TASK_COLUMNS, scope, filters, at, toTask);
    },
    async listTaskEvents(task) {
      const rows = await q.all(
        `SELECT ${EVENT_COLUMNS} FROM task_events WHERE tenant_id = ? AND task_id = ? ORDER BY task_version`,
        [task.tenant_id, task.id],
      );
      return rows.map(toTaskEvent);
    },
    async insertTask(t: Task) {
      const changed = await q.run(
        `INSERT INTO tasks (${TASK_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
        [
          t.id,
          t.tenant_id,
          t.user_id,
          t.session_id,
          t.type,
          t.state,
          toJson(t.slots),
          t.status_line,
          toJson(t.data),
          t.version,
          t.created_at,
          t.updated_at,
          t.closed_at,
        ],
      );
      if (changed === 1 && deferred !== null)
        kept.set(`task:${t.id}`, { kind: 'task', row: t, previous: null });
      return changed === 1;
    },
    async replaceTask(next, previous) {
      if (deferred !== null) {
        // Kept: a task written twice is written once, against the row as first read.
        const own = kept.get(`task:${next.id}`);
        const first = own?.kind === 'task' ? own.previous : previous;
        if (first === null) throw new OptimisticMiss('a task written after its insert');
        deferred.write(`task:${next.id}`, UPDATE_TASK, updateTaskParams(next, first));
        kept.set(`task:${next.id}`, { kind: 'task', row: next, previous: first });
        return true;
      }
      const changed = await q.run(UPDATE_TASK, updateTaskParams(next, previous));
      return changed === 1;
    },
    async addTaskEvent(e: StoredTaskEvent) {
      await q.run(`INSERT INTO task_events (${EVENT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, [
        e.id,
        e.tenant_id,
        e.user_id,
        e.task_id,
        e.from_state,
        e.to_state,
        e.cause,
        e.task_version,
        e.at,
        e.snapshot === undefined ? null : JSON.stringify(e.snapshot),
      ]);
    },
    async getAction(scope, id) {
      const where = scopeCheck(scope);
      const row = await q.get(`SELECT ${ACTION_COLUMNS} FROM actions WHERE id = ? AND ${where.sql}`, [
        id,
        ...where.params,
      ]);
      return row === undefined ? null : toAction(row);
    },
    async getActionByKey(scope, key) {
      const row = await q.get(
        `SELECT ${ACTION_COLUMNS} FROM actions WHERE tenant_id = ? AND user_id = ? AND idempotency_key = ?`,
        [scope.tenant_id, scope.user_id, key],
      );
      return row === undefined ? null : toAction(row);
    },
    listActions(scope, filter, at) {
      const filters: [string, SqlParam[]][] = [];
      if (filter.task_id !== undefined) filters.push(['task_id = ?', [filter.task_id]]);
      if (filter.status !== undefined) filters.push(['status = ?', [filter.status]]);
      return page(q, 'actions', ACTION_COLUMNS, scope, filters, at, toAction);
    },
    async insertAction(a: Action) {
      const changed = await q.run(
        `INSERT INTO actions (${ACTION_COLUMNS}) VALUES (${ACTION_VALUES}) ON CONFLICT DO NOTHING`,
        [
          a.id,
          a.tenant_id,
          a.user_id,
          a.task_id,
          a.session_id,
          a.type,
          a.tool,
          toJson(a.params),
          a.idempotency_key,
          a.status,
          a.result === null ? null : toJson(a.result),
          a.error === null ? null : toJson(a.error),
          a.attempts,
          a.note,
          a.created_at,
          a.updated_at,
          a.completed_at,
        ],
      );
      return changed === 1;
    },
    async replaceAction(next, previous) {
      const changed = await q.run(
        `UPDATE actions SET status = ?, result = ?, error = ?, note = ?, attempts = ?, updated_at = ?, completed_at = ?
          WHERE id = ? AND status = ? AND attempts = ?`,
        [
          next.status,
          next.result === null ? null : toJson(next.result),
          next.error === null ? null : toJson(next.error),
          next.note,
          next.attempts,
          next.updated_at,
          next.completed_at,
          previous.id,
          previous.status,
          previous.attempts,
        ],
      );
      return changed === 1;
    },
  };
}
