/**
 * Action rows: a hash per action (no TTL), the user's idempotency keys (key -> action id) and lex indexes
 * by user, task and status; the cross-tenant counts of PENDING and UNKNOWN actions are set after each write
 * commits (action-stats.ts). A transaction that read a key checks at commit that it still names what it
 * read, so two concurrent beginnings of one key create one action.
 */
import type { Action } from '../../core/model.js';
import type { ActionFilter, Listed, PageRequest } from '../core/driver.js';
import type { ReadScope, Scope } from '../types.js';
import { countActionAfterCommit } from './action-stats.js';
import { noteAge } from './ages.js';
import type { Io } from './io.js';
import { indexMember, type UserKeys } from './keys.js';
import { scanRecords } from './lists.js';
import { indexInTenant, tenantKeys } from './scope.js';
import { TaskRows } from './tasks.js';

const finished = (action: Action) => action.status === 'SUCCESS' || action.status === 'FAILED';

export class ActionRows extends TaskRows {
  /** The action id the idempotency key names: read once per transaction (checked at its commit). */
  private async held(keys: UserKeys, key: string): Promise<string | null> {
    const at = `${keys.actionKeys()}\u0000${key}`;
    const known = this.actionKeys.get(at);
    if (known !== undefined) return known;
    const id = await this.ctx.redis.hget(keys.actionKeys(), key);
    if (this.plan !== null) {
      this.plan.check(keys.actionKeys(), key, id);
      this.actionKeys.set(at, id);
    }
    return id;
  }

  /** After a write: the action's retention hint when finished, its count, its status index moved. */
  private actionWritten(keys: UserKeys, next: Action, from: Action['status'] | null): void {
    const plan = this.p;
    const member = indexMember(next.created_at, next.id);
    if (finished(next)) noteAge(plan, next.tenant_id, next.user_id, 'actions', next.id, next.updated_at);
    if (from !== next.status) {
      if (from !== null) plan.write('ZREM', keys.actionsByStatus(from), member);
      plan.write('ZADD', keys.actionsByStatus(next.status), 0, member);
    }
    countActionAfterCommit(plan, next);
  }

  async getAction(scope: ReadScope, id: string): Promise<Action | null> {
    const keys = await this.owner(scope, id);
    return keys === null ? null : this.record<Action>(keys.action(id));
  }
  async getActionByKey(scope: Scope, key: string): Promise<Action | null> {
    const keys = this.keys(scope);
    const id = await this.held(keys, key);
    return id === null ? null : this.record<Action>(keys.action(id));
  }
  listActions(scope: ReadScope, filter: ActionFilter, page: PageRequest): Promise<Listed<Action>[]> {
    return listActions(this, scope, filter, page);
  }

  async insertAction(action: Action): Promise<boolean> {
    const keys = this.keys(action);
    const key = keys.action(action.id);
    // The key is taken by an action that exists (an entry left by a deleted one is overwritten).
    const holder = await this.held(keys, action.idempotency_key);
    if (holder !== null && (await this.row(keys.action(holder))) !== null) return false;
    if ((await this.row(key)) !== null) return false;
    const plan = this.p;
    plan.put(key, JSON.stringify(action));
    plan.write('HSET', keys.actionKeys(), action.idempotency_key, action.id);
    this.actionKeys.set(`${keys.actionKeys()}\u0000${action.idempotency_key}`, action.id);
    const member = indexMember(action.created_at, action.id);
    plan.write('ZADD', keys.actions(), 0, member);
    plan.write('ZADD', keys.actionsByTask(action.task_id), 0, member);
    this.actionWritten(keys, action, null);
    const tenantList = tenantKeys(this.ctx, action.tenant_id).actions();
    indexInTenant(plan, action.tenant_id, action.user_id, action.id, key, [[tenantList, member]], 'action');
    return true;
  }

  async replaceAction(next: Action, previous: Action): Promise<boolean> {
    const keys = this.keys(previous);
    const key = keys.action(previous.id);
    const stored = await this.record<Action>(key);
    if (stored === null || stored.status !== previous.status || stored.attempts !== previous.attempts)
      return false;
    this.p.put(key, JSON.stringify(next));
    this.actionWritten(keys, next, stored.status);
    return true;
  }
}

/** By the user's index, by task or status index, or the tenant's index for a tenant key. */
async function listActions(
  io: Io,
  scope: ReadScope,
  filter: ActionFilter,
  page: PageRequest,
): Promise<Listed<Action>[]> {
  const { ctx } = io;
  let keys: string[];
  let owner: string | undefined = scope.user_id;
  if (filter.task_id !== undefined) {
    // A task's actions live with the task's owner: found first for a tenant key.
    const user = await io.ownerOf(scope, filter.task_id);
    if (user === null) return [];
    owner = user;
    keys = [io.keys({ tenant_id: scope.tenant_id, user_id: user }).actionsByTask(filter.task_id)];
  } else if (scope.user_id !== undefined) {
    const user = io.keys({ tenant_id: scope.tenant_id, user_id: scope.user_id });
    keys = [filter.status === undefined ? user.actions() : user.actionsByStatus(filter.status)];
  } else keys = [tenantKeys(ctx, scope.tenant_id).actions()];
  return scanRecords<Action>(ctx, {
    keys,
    page,
    tenant: scope.tenant_id,
    owner,
    record: (k, id) => k.action(id),
    keep: (action) =>
      (filter.status === undefined || action.status === filter.status) &&
      (filter.task_id === undefined || action.task_id === filter.task_id),
  });
}
