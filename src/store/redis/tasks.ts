/** Task rows: a hash per task (no TTL), a list of its events, and lex indexes by user, session and state. */
import type { Task, TaskEvent } from '../../core/model.js';
import type { Listed, PageRequest, TaskFilter } from '../core/driver.js';
import type { ReadScope } from '../types.js';
import { noteAge } from './ages.js';
import type { Io } from './io.js';
import { indexMember } from './keys.js';
import { scanRecords } from './lists.js';
import type { Ctx } from './plan.js';
import { indexInTenant, tenantKeys } from './scope.js';
import { SessionRows } from './sessions.js';

export class TaskRows extends SessionRows {
  async getTask(scope: ReadScope, id: string): Promise<Task | null> {
    const keys = await this.owner(scope, id);
    return keys === null ? null : this.record<Task>(keys.task(id));
  }
  listTasks(scope: ReadScope, filter: TaskFilter, page: PageRequest): Promise<Listed<Task>[]> {
    return listTasks(this, scope, filter, page);
  }
  async listTaskEvents(task: Task): Promise<TaskEvent[]> {
    const rows = await this.ctx.redis.lrange(this.keys(task).taskEvents(task.id), 0, -1);
    return rows.map((row) => JSON.parse(row) as TaskEvent);
  }

  async insertTask(task: Task): Promise<boolean> {
    const keys = this.keys(task);
    const key = keys.task(task.id);
    if ((await this.row(key)) !== null) return false;
    const plan = this.p;
    plan.put(key, JSON.stringify(task));
    const member = indexMember(task.created_at, task.id);
    plan.write('ZADD', keys.tasks(), 0, member);
    plan.write('ZADD', keys.tasksByState(task.state), 0, member);
    if (task.session_id !== null) plan.write('ZADD', keys.tasksBySession(task.session_id), 0, member);
    noteAge(plan, task.tenant_id, task.user_id, 'tasks', task.id, task.updated_at);
    const tenantList = tenantKeys(this.ctx, task.tenant_id).tasks();
    indexInTenant(plan, task.tenant_id, task.user_id, task.id, key, [[tenantList, member]], 'task');
    return true;
  }

  async replaceTask(next: Task, previous: Task): Promise<boolean> {
    const keys = this.keys(previous);
    const key = keys.task(previous.id);
    const stored = await this.record<Task>(key);
    if (stored === null || stored.version !== previous.version) return false;
    const plan = this.p;
    plan.put(key, JSON.stringify(next));
    noteAge(plan, next.tenant_id, next.user_id, 'tasks', next.id, next.updated_at);
    const member = indexMember(stored.created_at, stored.id);
    if (next.state !== stored.state) {
      plan.write('ZREM', keys.tasksByState(stored.state), member);
      plan.write('ZADD', keys.tasksByState(next.state), 0, member);
    }
    if (next.session_id !== stored.session_id) {
      if (stored.session_id !== null) plan.write('ZREM', keys.tasksBySession(stored.session_id), member);
      if (next.session_id !== null) plan.write('ZADD', keys.tasksBySession(next.session_id), 0, member);
    }
    return true;
  }

  async addTaskEvent(event: TaskEvent): Promise<void> {
    this.p.write('RPUSH', this.keys(event).taskEvents(event.task_id), JSON.stringify(event));
  }
}

/** Of two sets of index keys, the one with fewer members in all (ties: the first). */
async function smallerIndex(ctx: Ctx, first: string[], second: string[]): Promise<string[]> {
  const sizes = await Promise.all([...first, ...second].map((key) => ctx.redis.zcard(key)));
  const total = (from: number, to: number) => sizes.slice(from, to).reduce((n, size) => n + size, 0);
  return total(first.length, sizes.length) < total(0, first.length) ? second : first;
}

async function listTasks(
  io: Io,
  scope: ReadScope,
  filter: TaskFilter,
  page: PageRequest,
): Promise<Listed<Task>[]> {
  const { ctx } = io;
  const states = filter.states ?? null;
  let keys: string[];
  if (scope.user_id === undefined) keys = [tenantKeys(ctx, scope.tenant_id).tasks()];
  else {
    const user = io.keys({ tenant_id: scope.tenant_id, user_id: scope.user_id });
    const byState = states === null ? null : [...new Set(states)].map((s) => user.tasksByState(s));
    if (filter.session_id !== undefined) {
      keys = [user.tasksBySession(filter.session_id)];
      // A session and states (a turn's open tasks): the smaller index is scanned, the other filters. The
      // session's index holds its whole history; the user's open states hold a few tasks.
      if (byState !== null) keys = await smallerIndex(ctx, keys, byState);
    } else keys = byState ?? [user.tasks()];
  }
  return scanRecords<Task>(ctx, {
    keys,
    page,
    tenant: scope.tenant_id,
    owner: scope.user_id,
    record: (k, id) => k.task(id),
    keep: (task) =>
      (states === null || states.includes(task.state)) &&
      (filter.session_id === undefined || task.session_id === filter.session_id) &&
      (filter.type === undefined || task.type === filter.type),
  });
}
