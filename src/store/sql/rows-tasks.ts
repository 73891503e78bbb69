/** Task, task event and action rows of the SQL driver. */

import type { JsonValue } from '../../core/json.js';
import type { Action, Task } from '../../core/model.js';
import { OPEN_TASK_STATES, type TaskState } from '../../core/model.js';
import { Checks } from '../core/checks.js';
import type { DriverTx, Listed, PageRequest, StoredTaskEvent } from '../core/driver.js';
import type { ReadScope } from '../types.js';
import { scopeCheck, scopeWhere } from './context.js';
import { LIMIT_PARAM, OptimisticMiss, type SqlExecutor, type SqlParam, type SqlRow } from './executor.js';
import { userKey } from './known-rows.js';
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
  | 'knownOpenTasks'
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

const jsonOrNull = (value: JsonValue | null) => (value === null ? null : toJson(value));

/** An action's row, in the order of ACTION_COLUMNS. */
function actionParams(a: Action): SqlParam[] {
  const { id, tenant_id, user_id, task_id, session_id, type, tool, idempotency_key, status } = a;
  return [
    ...[id, tenant_id, user_id, task_id, session_id, type, tool, toJson(a.params), idempotency_key, status],
    ...[jsonOrNull(a.result), jsonOrNull(a.error), a.attempts, a.note, a.created_at, a.updated_at],
    a.completed_at,
  ];
}

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

const HOLD_TASK = 'SELECT 1 FROM tasks WHERE id = ? AND version = ? AND created_at = ? FOR SHARE';
const HOLD_ACTION =
  'SELECT 1 FROM actions WHERE id = ? AND status = ? AND attempts = ? AND created_at = ? AND updated_at = ? FOR SHARE';
/** A session's open tasks, by id and version: what a list answered from known rows takes them to be. */
const HOLD_OPEN_TASKS = `SELECT 1 WHERE (SELECT COALESCE(string_agg(id || ':' || version, ',' ORDER BY id COLLATE "C"), '')
  FROM tasks WHERE tenant_id = ? AND user_id = ? AND session_id = ? AND ${OPEN_TASK_STATES_SQL}) = ?`;

const isOpen = (task: Task) => (OPEN_TASK_STATES as readonly string[]).includes(task.state);
const byId = (a: Task, b: Task) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

export function taskRows({ q, deferred, kept, known }: SqlTxEnv): TaskRows {
  return {
    async getTask(scope, id) {
      const where = scopeCheck(scope);
      const sql = `SELECT ${TASK_COLUMNS} FROM tasks WHERE id = ? AND ${where.sql}`;
      if (deferred !== null) {
        // Optimistic: a task it wrote is read back from what it wrote; any other by its key.
        const own = kept.get(`task:${id}`);
        if (own?.kind === 'task') return Checks.inScope(scope, own.row) ? own.row : null;
        const stored = known?.rows.tasks.get(id);
        if (stored !== undefined && known !== null) {
          // As this store last saw it, held unchanged (apart from a write of it, guarded by less).
          known.touched.tasks.add(id);
          if (!Checks.inScope(scope, stored)) return null;
          deferred.hold(`known-task:${id}`, HOLD_TASK, [id, stored.version, stored.created_at], true);
          return stored;
        }
        const row = await deferred.getRow(sql, [id, ...where.params]);
        if (row === undefined) return null;
        const task = toTask(row);
        known?.tasksRead.set(id, task);
        return task;
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
    knownOpenTasks(scope, session_id, limit) {
      if (deferred === null || known === null || scope.user_id === undefined) return null;
      const listed = known.rows.openTasks.get(userKey(scope));
      if (listed === undefined) return null;
      const before = listed.filter((task) => task.session_id === session_id);
      let open: Task[] = [...before];
      let created = 0;
      for (const row of kept.values()) {
        if (row.kind !== 'task') continue;
        const task = row.row;
        const at = open.findIndex((t) => t.id === task.id);
        const here = task.session_id === session_id && isOpen(task);
        if (at >= 0) {
          if (here) open[at] = task;
          else open = open.filter((t) => t.id !== task.id);
        } else if (here) {
          // A new task is the newest; one that joins the list otherwise has a place this cannot tell.
          if (row.previous !== null || ++created > 1) return null;
          open.unshift(task);
        }
      }
      known.touched.users.add(userKey(scope));
      const versions = [...before]
        .sort(byId)
        .map((task) => `${task.id}:${task.version}`)
        .join(',');
      const held = [scope.tenant_id, scope.user_id, session_id, versions];
      deferred.hold(`open:${session_id}`, HOLD_OPEN_TASKS, held, true);
      return open.slice(0, limit);
    },
    async getAction(scope, id) {
      const stored = deferred === null ? undefined : known?.rows.actions.get(id);
      if (stored !== undefined && deferred !== null && known !== null) {
        known.touched.actions.add(id);
        if (!Checks.inScope(scope, stored)) return null;
        const held = [id, stored.status, stored.attempts, stored.created_at, stored.updated_at];
        deferred.hold(`known-action:${id}`, HOLD_ACTION, held, true);
        return stored;
      }
      const where = scopeCheck(scope);
      const row = await q.get(`SELECT ${ACTION_COLUMNS} FROM actions WHERE id = ? AND ${where.sql}`, [
        id,
        ...where.params,
      ]);
      return row === undefined ? null : toAction(row);
    },
    async getActionByKey(scope, key) {
      // Optimistic: a write looks a key up to begin its action, which finds it free nearly always. Taken, the
      // action's insert (ON CONFLICT DO NOTHING, the key unique) writes no row and fails its guard, and the
      // work runs again in a transaction, which reads it; a write that would not insert fails as well.
      if (deferred !== null) {
        deferred.hold(`action-key:${key}`, 'SELECT 1 WHERE false', [], true);
        return null;
      }
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
      const params = actionParams(a);
      const sql = `INSERT INTO actions (${ACTION_COLUMNS}) VALUES (${ACTION_VALUES}) ON CONFLICT DO NOTHING`;
      if (deferred !== null) {
        for (const other of known?.actions.values() ?? [])
          if (other.idempotency_key === a.idempotency_key) throw new OptimisticMiss('one key begun twice');
        // Kept in place of the hold of its key, if the attempt took the key to be free (getActionByKey).
        deferred.write(`action-key:${a.idempotency_key}`, sql, params);
        known?.actions.set(a.id, a);
        return true;
      }
      return (await q.run(sql, params)) === 1;
    },
    async replaceAction(next, previous) {
      const changed = await q.run(
        `UPDATE actions SET status = ?, result = ?, error = ?, note = ?, attempts = ?, updated_at = ?, completed_at = ?
          WHERE id = ? AND status = ? AND attempts = ?`,
        [
          next.status,
          jsonOrNull(next.result),
          jsonOrNull(next.error),
          next.note,
          next.attempts,
          next.updated_at,
          next.completed_at,
          previous.id,
          previous.status,
          previous.attempts,
        ],
      );
      if (changed === 1) known?.actions.set(next.id, next);
      return changed === 1;
    },
  };
}
