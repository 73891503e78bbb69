/**
 * Run event rows: a list per run of one session, `P:{t:u}:ev:<sid>:<run>`, whose position is the event's
 * seq (1-based), and a small hash beside it, `P:{t:u}:evx:<sid>:<run>`, holding `x`: the expiry (ms) of the
 * run's newest event. Both are under the hash tag of the user who wrote them (the session's owner), so the
 * append lands in the script of its plan with the rest of the transaction (a turn's commit included), and
 * a read in another user's scope looks at another key and finds nothing; a tenant-wide read finds the
 * session's owner in the tenant's owner hash.
 *
 * An append is RPUSH + HSET x + PEXPIRE in the plan's script: the script numbers the events by pushing them
 * (no read of the run's length, no conflict between two appends of one run), and x is the newest event's
 * expiry as in the SQL stores (the last row's). A read is one LRANGE from `after_seq`. Expiry follows the
 * store's clock: each append writes a hint in the tenant's `evh` (before the script, as the session expiry
 * hints are), and `sweepRunEvents` (run by sweepExpired) checks each due hint against x in one script of
 * the user's slot, deleting the run when its newest event expired and re-scoring the hint otherwise. The
 * native TTL (PEXPIRE, renewed by every append) is only a backstop for a store never swept: the TTL's
 * length plus a grace of up to 10 s, a duration (never an instant of the store's clock, which may be far
 * from real time), so Redis drops a run no earlier than that long after its newest event was written.
 * Deleting a session leaves its runs' events to expire.
 */
import type { JsonObject } from '../../core/json.js';
import type { RunEventType } from '../../core/model.js';
import type { RunEventQuery, RunEventRow } from '../core/driver.js';
import type { ReadScope } from '../types.js';
import { escapeKeyPart, unescapeKeyPart } from './keys.js';
import { SmallRows } from './memory.js';
import type { Ctx } from './plan.js';
import { nativeTtlMs, registerTenant, tenantKeys, userKeys } from './scope.js';

/** An event as stored in its run's list: the owner ids and seq are the key's and the position's. */
interface StoredEvent {
  readonly type: RunEventType;
  readonly data: JsonObject;
  readonly created_at: string;
  readonly expires_at: string;
}

/** A hint's member: the run's owner, session and run id, each escaped (none then holds a colon). */
function hintMember(user: string, sessionId: string, runId: string): string {
  return `${escapeKeyPart(user)}:${escapeKeyPart(sessionId)}:${escapeKeyPart(runId)}`;
}

function parseHint(member: string): { user: string; sessionId: string; runId: string } | null {
  const parts = member.split(':');
  if (parts.length !== 3) return null;
  const [user, sessionId, runId] = parts.map(unescapeKeyPart) as [string, string, string];
  return { user, sessionId, runId };
}

/** Run events; with the rows before it, every row of a transaction. */
export class RunEventRows extends SmallRows {
  async listRunEvents(scope: ReadScope, query: RunEventQuery): Promise<RunEventRow[]> {
    const { session_id, run_id, after_seq, limit } = query;
    const user = await this.ownerOf(scope, session_id);
    if (user === null) return [];
    const key = userKeys(this.ctx, scope.tenant_id, user).runEvents(session_id, run_id);
    const rows = await this.ctx.redis.lrange(key, after_seq, after_seq + limit - 1);
    return rows.map((row, i) => ({
      tenant_id: scope.tenant_id,
      user_id: user,
      session_id,
      run_id,
      seq: after_seq + i + 1,
      ...(JSON.parse(row) as StoredEvent),
    }));
  }

  async appendRunEvents(rows: readonly Omit<RunEventRow, 'seq'>[]): Promise<void> {
    const newest = rows[rows.length - 1];
    if (newest === undefined) return;
    const { ctx } = this;
    const plan = this.p;
    const { tenant_id, user_id, session_id, run_id } = newest;
    const keys = this.keys(newest);
    const list = keys.runEvents(session_id, run_id);
    const expiry = keys.runEventsExpiry(session_id, run_id);
    const stored = rows.map(({ type, data, created_at, expires_at }) =>
      JSON.stringify({ type, data, created_at, expires_at } satisfies StoredEvent),
    );
    const expires = Date.parse(newest.expires_at);
    const length = expires - Date.parse(newest.created_at);
    const ttl = nativeTtlMs(expires, Date.parse(newest.created_at), length / 1000);
    plan.write('RPUSH', list, ...stored);
    plan.write('HSET', expiry, 'x', expires);
    plan.write('PEXPIRE', list, ttl);
    plan.write('PEXPIRE', expiry, ttl);
    // The sweeper's hint, before the script (another slot); never lowered by a writer whose clock is behind.
    const hints = tenantKeys(ctx, tenant_id).runEventHints();
    const member = hintMember(user_id, session_id, run_id);
    plan.before.push(() => ctx.redis.zadd(hints, 'GT', expires, member));
    registerTenant(plan, tenant_id);
  }
}

/**
 * Removes the events of up to `limit` runs of the tenant whose newest event expired at `now`; a hint whose
 * run has a newer event moves to that event's expiry. Answers how many runs were removed.
 */
export async function sweepRunEvents(ctx: Ctx, tenant: string, now: number, limit: number): Promise<number> {
  const hints = tenantKeys(ctx, tenant).runEventHints();
  const members = await ctx.redis.zrangebyscore(hints, '-inf', now, 'LIMIT', 0, limit);
  const swept = await Promise.all(
    members.map(async (member) => {
      const run = parseHint(member);
      if (run === null) {
        await ctx.redis.zrem(hints, member);
        return 0;
      }
      const keys = userKeys(ctx, tenant, run.user);
      const reply = Number(
        await ctx.scripts.sweepRunEvents(
          2,
          keys.runEventsExpiry(run.sessionId, run.runId),
          keys.runEvents(run.sessionId, run.runId),
          now,
        ),
      );
      if (reply !== -1) {
        await ctx.redis.zadd(hints, 'GT', reply, member);
        return 0;
      }
      // Only while still due: an append racing with this sweep moved the hint to its own expiry.
      await ctx.scripts.removeDue(1, hints, now, member);
      return 1;
    }),
  );
  return swept.reduce<number>((sum, n) => sum + n, 0);
}
