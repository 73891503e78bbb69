/** Listing actions: by the user's index, by task or status index, or the tenant's index for a tenant key. */

import { isId } from '../../core/ids.js';
import { ACTION_STATUSES, type Action } from '../../core/model.js';
import { ACTION_QUERY_FIELDS } from '../shared/known-fields.js';
import { type ActionQuery, DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT, type Page, type ReadScope } from '../types.js';
import { memberId } from './keys.js';
import { MISSING, SKIP, scanIndex } from './lists.js';
import type { Ctx } from './plan.js';
import { resolveUser, resolveUsers, tenantKeys, userKeys } from './scope.js';
import * as v from './validate.js';
import { cursorList } from './validate.js';

export async function listActions(
  ctx: Ctx,
  scope: ReadScope,
  query: ActionQuery = {},
): Promise<Page<Action>> {
  v.checkReadScope(scope);
  v.query(query, ACTION_QUERY_FIELDS);
  const limit = v.limit(query.limit, DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT);
  const status = query.status === undefined ? undefined : v.oneOf(query.status, ACTION_STATUSES, 'status');
  const taskId = query.task_id === undefined ? undefined : v.text(query.task_id, 'task_id');
  const empty: Page<Action> = { items: [], next_cursor: null };
  let keys: string[];
  let owner: string | undefined = scope.user_id;
  if (taskId !== undefined) {
    if (!isId(taskId, 'task')) return empty;
    // A task's actions live with the task's owner: find it first for a tenant key.
    const user = await resolveUser(ctx, scope, taskId);
    if (user === null) return empty;
    owner = user;
    keys = [userKeys(ctx, scope.tenant_id, user).actionsByTask(taskId)];
  } else if (scope.user_id !== undefined) {
    const user = userKeys(ctx, scope.tenant_id, scope.user_id);
    keys = [status === undefined ? user.actions() : user.actionsByStatus(status)];
  } else {
    keys = [tenantKeys(ctx, scope.tenant_id).actions()];
  }
  const perUser = owner !== undefined;
  return scanIndex<Action>(ctx, {
    keys,
    desc: true,
    limit,
    cursor: query.cursor,
    list: cursorList('actions', scope),
    load: async (members) => {
      const ids = members.map(memberId);
      const users = owner === undefined ? await resolveUsers(ctx, scope, ids) : ids.map(() => owner);
      return Promise.all(
        ids.map(async (id, i) => {
          const user = users[i];
          if (user === null || user === undefined) return SKIP;
          const json = await ctx.redis.hget(userKeys(ctx, scope.tenant_id, user).action(id), 'd');
          if (json === null) return perUser ? MISSING : SKIP;
          const action = JSON.parse(json) as Action;
          if (status !== undefined && action.status !== status) return SKIP;
          if (taskId !== undefined && action.task_id !== taskId) return SKIP;
          return action;
        }),
      );
    },
    prune: (key, member) => ctx.redis.zrem(key, member),
  });
}
