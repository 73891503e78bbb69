/**
 * Listing sessions, newest first: the user's index, or the tenant's for a tenant key. Entries of vanished
 * sessions are skipped and removed; expired sessions are skipped and removed at once.
 */

import { SESSION_STATUSES, type Session } from '../../core/model.js';
import { SESSION_QUERY_FIELDS } from '../shared/known-fields.js';
import {
  DEFAULT_PAGE_LIMIT,
  MAX_PAGE_LIMIT,
  type Page,
  type ReadScope,
  type SessionQuery,
} from '../types.js';
import { memberId } from './keys.js';
import { MISSING, SKIP, scanIndex } from './lists.js';
import type { Ctx } from './plan.js';
import { resolveUsers, tenantKeys, userKeys } from './scope.js';
import { isLive } from './sessions.js';
import * as v from './validate.js';
import { cursorList } from './validate.js';

export async function listSessions(
  ctx: Ctx,
  scope: ReadScope,
  query: SessionQuery = {},
): Promise<Page<Session>> {
  v.checkReadScope(scope);
  v.query(query, SESSION_QUERY_FIELDS);
  const status = query.status === undefined ? undefined : v.oneOf(query.status, SESSION_STATUSES, 'status');
  const limit = v.limit(query.limit, DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT);
  const userIndex =
    scope.user_id === undefined ? null : userKeys(ctx, scope.tenant_id, scope.user_id).sessions();
  return scanIndex<Session>(ctx, {
    keys: [userIndex ?? tenantKeys(ctx, scope.tenant_id).sessions()],
    desc: true,
    limit,
    cursor: query.cursor,
    list: cursorList('sessions', scope),
    load: async (members) => {
      const ids = members.map(memberId);
      const users = await resolveUsers(ctx, scope, ids);
      const now = ctx.clock.now();
      return Promise.all(
        ids.map(async (id, i) => {
          const user = users[i];
          if (user === null || user === undefined) return SKIP;
          const keys = userKeys(ctx, scope.tenant_id, user);
          const json = await ctx.redis.hget(keys.session(id), 'd');
          if (json === null) return userIndex === null ? SKIP : MISSING;
          const session = JSON.parse(json) as Session;
          if (!isLive(session, now)) {
            // Expired: removed now with its messages and the user's index entry (the script checks the
            // expiry again); the tenant's entries go with the next sweep, which counts it.
            const member = members[i] as string;
            await ctx.scripts.sweepSession(
              3,
              keys.session(id),
              keys.messages(id),
              keys.sessions(),
              now,
              member,
            );
            return SKIP;
          }
          return status !== undefined && session.status !== status ? SKIP : session;
        }),
      );
    },
    prune: (key, member) => ctx.redis.zrem(key, member),
  });
}
