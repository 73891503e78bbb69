/** Task, task event and action rows of the SQL driver. */

import type { Action, Task } from '../../core/model.js';
import { OPEN_TASK_STATES, type TaskState } from '../../core/model.js';
import { Checks } from '../core/checks.js';
import type { DriverTx, Listed, PageRequest, StoredTaskEvent } from '../core/driver.js';
import type { ReadScope } from '../types.js';
import { scopeCheck, scopeWhere } from './context.js';
import { LIMIT_PARAM, OptimisticMiss, type SqlExecutor, type SqlParam, type SqlRow } from './executor.js';
import { userKey } from './known-rows.js';
import { ACTIONS, TASK_EVENTS, TASKS } from './rows.js';
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

const TASK_SET = TASKS.assign(
  'state slots status_line data session_id version updated_at closed_at'.split(' '),
);
const UPDATE_TASK = `UPDATE tasks SET ${TASK_SET.sql} WHERE id = ? AND version = ?`;
const updateTaskParams = (next: Task, previous: Task): SqlParam[] => [
  ...TASK_SET.params(next),
  previous.id,
  previous.version,
];
const ACTION_SET = ACTIONS.assign('status result error note attempts updated_at completed_at'.split(' '));

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
      const sql = `SELECT ${TASKS.columns} FROM tasks WHERE id = ? AND ${where.sql}`;
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
        const task = TASKS.decode(row);
        known?.tasksRead.set(id, task);
        return task;
      }
      const row = await q.get(sql, [id, ...where.params]);
      return row === undefined ? null : TASKS.decode(row);
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
      return page(q, 'tasks', TASKS.columns, scope, filters, at, TASKS.decode);
    },
    async listTaskEvents(task) {
      const rows = await q.all(
        `SELECT ${TASK_EVENTS.columns} FROM task_events WHERE tenant_id = ? AND task_id = ? ORDER BY task_version`,
        [task.tenant_id, task.id],
      );
      return rows.map(TASK_EVENTS.decode);
    },
    async insertTask(t: Task) {
      const changed = await q.run(
        `INSERT INTO tasks (${TASKS.columns}) VALUES ${TASKS.placeholders} ON CONFLICT (id) DO NOTHING`,
        TASKS.params(t),
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
      await q.run(
        `INSERT INTO task_events (${TASK_EVENTS.columns}) VALUES ${TASK_EVENTS.placeholders}`,
        TASK_EVENTS.params(e),
      );
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
      const row = await q.get(`SELECT ${ACTIONS.columns} FROM actions WHERE id = ? AND ${where.sql}`, [
        id,
        ...where.params,
      ]);
      return row === undefined ? null : ACTIONS.decode(row);
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
        `SELECT ${ACTIONS.columns} FROM actions WHERE tenant_id = ? AND user_id = ? AND idempotency_key = ?`,
        [scope.tenant_id, scope.user_id, key],
      );
      return row === undefined ? null : ACTIONS.decode(row);
    },
    listActions(scope, filter, at) {
      const filters: [string, SqlParam[]][] = [];
      if (filter.task_id !== undefined) filters.push(['task_id = ?', [filter.task_id]]);
      if (filter.status !== undefined) filters.push(['status = ?', [filter.status]]);
      return page(q, 'actions', ACTIONS.columns, scope, filters, at, ACTIONS.decode);
    },
    async insertAction(a: Action) {
      const params = ACTIONS.params(a);
      const sql = `INSERT INTO actions (${ACTIONS.columns}) VALUES ${ACTIONS.placeholders} ON CONFLICT DO NOTHING`;
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
        `UPDATE actions SET ${ACTION_SET.sql} WHERE id = ? AND status = ? AND attempts = ?`,
        [...ACTION_SET.params(next), previous.id, previous.status, previous.attempts],
      );
      if (changed === 1) known?.actions.set(next.id, next);
      return changed === 1;
    },
  };
}
