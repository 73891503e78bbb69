/**
 * Session and message rows: a hash per session (d, r, n = message count, x = expires ms) and a list of its
 * messages (index = seq - 1, stored without the owner ids the key holds), both with the session's native
 * TTL; the user's and the tenant's lex indexes and the tenant's expiry hints (sweep.ts).
 */
import type { Message, Session } from '../../core/model.js';
import type { Listed, PageRequest, SessionFilter } from '../core/driver.js';
import { keptUntilMs } from '../shared/kept-until.js';
import type { ReadScope } from '../types.js';
import { Io, type Row } from './io.js';
import { indexMember } from './keys.js';
import { scanRecords } from './lists.js';
import { indexInTenant, nativeTtlMs, registerTenant, tenantKeys } from './scope.js';
import { countAfterCommit, uncount } from './stats.js';

/** Every read of a session takes its message count along (the plan keeps it with the record). */
const COUNT = ['n'];

export class SessionRows extends Io {
  private sessionRow(s: Session): Promise<Row | null> {
    return this.row(this.keys(s).session(s.id), COUNT);
  }

  /** Writes a session with its native TTL (and its messages'); counted by status after the commit. */
  private putSession(session: Session, extra: Record<string, number> = {}): void {
    const keys = this.keys(session);
    const plan = this.p;
    const expires = keptUntilMs(session);
    const ttl = nativeTtlMs(expires, this.ctx.clock.now(), session.ttl_seconds);
    plan.put(keys.session(session.id), JSON.stringify(session), { x: expires, ...extra });
    plan.write('PEXPIRE', keys.session(session.id), ttl);
    plan.write('PEXPIRE', keys.messages(session.id), ttl);
    // The user's session index outlives the last of their sessions by nothing, sweeper or not.
    plan.write('EXTEND', keys.sessions(), ttl);
    countAfterCommit(plan, session);
  }

  private async messageRange(session: Session, start: number, stop: number): Promise<Message[]> {
    const rows = await this.ctx.redis.lrange(this.keys(session).messages(session.id), start, stop);
    const owner = { tenant_id: session.tenant_id, user_id: session.user_id, session_id: session.id };
    return rows.map((row) => ({ ...owner, ...(JSON.parse(row) as Omit<Message, keyof typeof owner>) }));
  }

  async getSession(scope: ReadScope, id: string): Promise<Session | null> {
    const keys = await this.owner(scope, id);
    return keys === null ? null : this.record<Session>(keys.session(id), COUNT);
  }
  listSessions(scope: ReadScope, filter: SessionFilter, page: PageRequest): Promise<Listed<Session>[]> {
    return listSessions(this, scope, filter, page);
  }

  async insertSession(session: Session): Promise<boolean> {
    const { ctx } = this;
    const keys = this.keys(session);
    const key = keys.session(session.id);
    if ((await this.row(key, COUNT)) !== null) return false;
    const plan = this.p;
    const member = indexMember(session.created_at, session.id);
    plan.write('ZADD', keys.sessions(), 0, member);
    this.putSession(session, { n: 0 });
    const tenant = tenantKeys(ctx, session.tenant_id);
    const lists = [[tenant.sessions(), member]] as const;
    indexInTenant(plan, session.tenant_id, session.user_id, session.id, key, lists, 'session');
    const expiry = tenant.sessionExpiry();
    plan.before.push(() => ctx.redis.zadd(expiry, Date.parse(session.expires_at), member));
    plan.undo.push(() => ctx.redis.zrem(expiry, member));
    registerTenant(plan, session.tenant_id);
    return true;
  }

  async replaceSession(next: Session, previous: Session): Promise<boolean> {
    const row = await this.sessionRow(previous);
    if (row === null) return false;
    const stored = JSON.parse(row.json) as Session;
    if (
      stored.version !== previous.version ||
      stored.expires_at !== previous.expires_at ||
      stored.retained_until !== previous.retained_until
    )
      return false;
    this.putSession(next);
    return true;
  }

  async deleteSession(session: Session): Promise<void> {
    const { ctx } = this;
    const keys = this.keys(session);
    const plan = this.p;
    const member = indexMember(session.created_at, session.id);
    plan.remove(keys.session(session.id));
    plan.write('DEL', keys.messages(session.id));
    plan.write('ZREM', keys.sessions(), member);
    const tenant = tenantKeys(ctx, session.tenant_id);
    plan.after.push(() =>
      Promise.all([
        ctx.redis.hdel(tenant.owners(), session.id),
        ctx.redis.zrem(tenant.sessions(), member),
        ctx.redis.zrem(tenant.sessionExpiry(), member),
        uncount(ctx, session.tenant_id, session.user_id, session.id),
      ]),
    );
  }

  async messageCount(session: Session): Promise<number> {
    return Number((await this.sessionRow(session))?.extra.n ?? 0);
  }
  listMessages(session: Session, after_seq: number, limit: number): Promise<Message[]> {
    return this.messageRange(session, after_seq, after_seq + limit - 1);
  }
  lastMessages(session: Session, n: number): Promise<Message[]> {
    return this.messageRange(session, -n, -1);
  }

  async appendMessages(session: Session, messages: readonly Message[]): Promise<void> {
    if (messages.length === 0) return;
    const keys = this.keys(session);
    await this.sessionRow(session);
    const plan = this.p;
    // The count goes up in the script that appends (its revision checked), so seqs stay gap-free.
    plan.bump(keys.session(session.id), 'n', messages.length);
    const compact = messages.map(({ tenant_id: _t, user_id: _u, session_id: _s, ...rest }) =>
      JSON.stringify(rest),
    );
    plan.write('RPUSH', keys.messages(session.id), ...compact);
    // The list may be new: it lives as long as the session.
    const ttl = nativeTtlMs(keptUntilMs(session), this.ctx.clock.now(), session.ttl_seconds);
    plan.write('PEXPIRE', keys.messages(session.id), ttl);
  }
}

/**
 * The user's index, or the tenant's for a tenant key. Entries of vanished sessions are skipped (and removed
 * from the user's index); expired sessions are skipped and removed at once with their messages.
 */
async function listSessions(
  io: Io,
  scope: ReadScope,
  filter: SessionFilter,
  page: PageRequest,
): Promise<Listed<Session>[]> {
  const { ctx } = io;
  const now = Date.parse(filter.liveAt);
  const user = scope.user_id;
  const userIndex =
    user === undefined ? null : io.keys({ tenant_id: scope.tenant_id, user_id: user }).sessions();
  return scanRecords<Session>(ctx, {
    keys: [userIndex ?? tenantKeys(ctx, scope.tenant_id).sessions()],
    page,
    tenant: scope.tenant_id,
    owner: user,
    record: (k, id) => k.session(id),
    keep: async (session, { keys, id, member }) => {
      if (Date.parse(session.expires_at) <= now) {
        // Expired: removed now with its messages and the user's index entry (the script checks the expiry
        // again); the tenant's entries go with the next sweep, which counts it.
        await ctx.scripts.sweepSession(3, keys.session(id), keys.messages(id), keys.sessions(), now, member);
        return false;
      }
      return filter.status === undefined || session.status === filter.status;
    },
  });
}
