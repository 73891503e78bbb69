/** Sessions: a hash per session with native TTL, renewed by activity; reads still check expires_at. */

import { isoAt } from '../../core/clock.js';
import { AgentStateError, invalidRequest, versionConflict } from '../../core/errors.js';
import { isId, newId } from '../../core/ids.js';
import { SESSION_STATUSES, SESSION_TRANSITIONS, type Session, type SessionStatus } from '../../core/model.js';
import { SESSION_FIELDS, SESSION_PATCH_FIELDS } from '../shared/known-fields.js';
import type { NewSession, ReadScope, Scope, SessionPatch } from '../types.js';
import { indexMember } from './keys.js';
import { type Ctx, type Plan, runPlan } from './plan.js';
import { indexInTenant, inOwnerScope, nativeTtlMs, registerTenant, tenantKeys, userKeys } from './scope.js';
import { countAfterCommit, uncount } from './stats.js';
import * as v from './validate.js';

const SETTABLE: readonly SessionStatus[] = SESSION_STATUSES.filter((s) => s !== 'expired');

export function isLive(session: Session, nowMs: number): boolean {
  return Date.parse(session.expires_at) > nowMs;
}

export function checkSessionPatch(patch: SessionPatch): void {
  if (typeof patch !== 'object' || patch === null)
    throw invalidRequest('[redis] session patch must be an object');
  v.knownFields(patch, SESSION_PATCH_FIELDS, 'patch');
  if (patch.status !== undefined) v.oneOf(patch.status, SETTABLE, 'patch.status');
  if (patch.context !== undefined) v.jsonObject(patch.context, 'session.context');
  if (patch.agent !== undefined) v.nullableText(patch.agent, 'patch.agent');
  if (patch.ttl_seconds !== undefined) v.ttlSeconds(patch.ttl_seconds, 'patch.ttl_seconds');
}

/** Writes a session (renewing or keeping its TTL) into the plan. */
function putSession(plan: Plan, scope: Scope, session: Session): void {
  const keys = userKeys(plan.ctx, scope.tenant_id, scope.user_id);
  const expires = Date.parse(session.expires_at);
  const ttl = nativeTtlMs(expires, plan.ctx.clock.now(), session.ttl_seconds);
  plan.put(keys.session(session.id), JSON.stringify(session), { x: expires });
  plan.write('PEXPIRE', keys.session(session.id), ttl);
  plan.write('PEXPIRE', keys.messages(session.id), ttl);
  // The user's session index outlives the last of their sessions by nothing, sweeper or not.
  plan.write('EXTEND', keys.sessions(), ttl);
  countAfterCommit(plan, session);
}

/** Reads a live session into the plan; null when missing or expired. */
export async function readLiveSession(plan: Plan, scope: Scope, id: string) {
  if (!isId(id, 'session')) return null;
  const row = await plan.read(userKeys(plan.ctx, scope.tenant_id, scope.user_id).session(id), ['n']);
  if (row === null) return null;
  const session = JSON.parse(row.json) as Session;
  return isLive(session, plan.ctx.clock.now()) ? { session, count: Number(row.extra.n ?? 0) } : null;
}

function notFound(id: string): AgentStateError {
  return new AgentStateError('not_found', `[redis] session ${id} not found`);
}

/**
 * A record that names a session (a task, an action, a checkpoint) may only name one the writer can read:
 * the owner's own live session (ended or not). Read into the plan, so the script refuses the write when
 * the session changes or goes before it runs. `not_found` otherwise, as a read of it in that scope.
 */
export async function requireOwnSession(plan: Plan, scope: Scope, id: string | null | undefined) {
  if (id === null || id === undefined) return;
  if ((await readLiveSession(plan, scope, id)) === null) throw notFound(id);
}

export async function prepareCreateSession(plan: Plan, scope: Scope, input: NewSession): Promise<Session> {
  const ctx = plan.ctx;
  if (typeof input !== 'object' || input === null)
    throw invalidRequest('[redis] session input must be an object');
  v.knownFields(input, SESSION_FIELDS, 'session');
  const id = v.optionalId(input.id, 'session', 'id') ?? newId('session', ctx.random);
  const ttl =
    input.ttl_seconds === undefined ? ctx.defaultTtlSeconds : v.ttlSeconds(input.ttl_seconds, 'ttl_seconds');
  const context = input.context === undefined ? {} : v.jsonObject(input.context, 'session.context');
  const status = input.status === undefined ? 'active' : v.oneOf(input.status, SETTABLE, 'status');
  const agent = v.nullableText(input.agent, 'agent');
  const now = ctx.clock.now();
  const at = isoAt(now);
  const session: Session = {
    id,
    tenant_id: scope.tenant_id,
    user_id: scope.user_id,
    agent,
    status,
    context: structuredClone(context),
    version: 1,
    ttl_seconds: ttl,
    created_at: at,
    updated_at: at,
    last_activity_at: at,
    expires_at: isoAt(now + ttl * 1000),
    ended_at: status === 'ended' ? at : null,
  };
  const keys = userKeys(ctx, scope.tenant_id, scope.user_id);
  if ((await plan.read(keys.session(id))) !== null) {
    throw new AgentStateError('conflict', `[redis] session ${id} already exists`);
  }
  const member = indexMember(at, id);
  plan.write('ZADD', keys.sessions(), 0, member);
  putSession(plan, scope, session);
  plan.write('HSET', keys.session(id), 'n', 0);
  const tenant = tenantKeys(ctx, scope.tenant_id);
  indexInTenant(
    plan,
    scope.tenant_id,
    scope.user_id,
    id,
    [[tenant.sessions(), member]],
    'session',
    input.id === undefined || input.id === null,
  );
  plan.before.push(() => ctx.redis.zadd(tenant.sessionExpiry(), Date.parse(session.expires_at), member));
  plan.undo.push(() => ctx.redis.zrem(tenant.sessionExpiry(), member));
  registerTenant(plan, scope.tenant_id);
  return session;
}

export async function prepareUpdateSession(
  plan: Plan,
  scope: Scope,
  id: string,
  expected: number,
  patch: SessionPatch,
): Promise<Session> {
  const found = await readLiveSession(plan, scope, id);
  if (found === null) throw notFound(id);
  const current = found.session;
  if (current.version !== expected) throw versionConflict('redis', 'session', id, expected, current.version);
  const status = patch.status ?? current.status;
  if (status !== current.status && !SESSION_TRANSITIONS[current.status].includes(status)) {
    throw invalidRequest(`[redis] session ${id} cannot go from ${current.status} to ${status}`, {
      from: current.status,
      to: status,
    });
  }
  const now = plan.ctx.clock.now();
  const at = isoAt(now);
  const ttl = patch.ttl_seconds ?? current.ttl_seconds;
  const next: Session = {
    ...current,
    status,
    context: patch.context === undefined ? current.context : structuredClone(patch.context),
    agent: patch.agent === undefined ? current.agent : patch.agent,
    ttl_seconds: ttl,
    version: current.version + 1,
    updated_at: at,
    last_activity_at: at,
    expires_at: isoAt(now + ttl * 1000),
    ended_at: status === 'ended' ? (current.ended_at ?? at) : null,
  };
  putSession(plan, scope, next);
  return next;
}

/** Renews the TTL of a live session (no version change); used by touch and by appending messages. */
export async function prepareTouchSession(plan: Plan, scope: Scope, id: string): Promise<Session | null> {
  const found = await readLiveSession(plan, scope, id);
  if (found === null) return null;
  const now = plan.ctx.clock.now();
  const next: Session = {
    ...found.session,
    last_activity_at: isoAt(now),
    expires_at: isoAt(now + found.session.ttl_seconds * 1000),
  };
  putSession(plan, scope, next);
  return next;
}

function withUser<T>(ctx: Ctx, scope: ReadScope, id: string, fn: (s: Scope) => Promise<T>, none: () => T) {
  return inOwnerScope(ctx, scope, id, 'session', fn, none);
}

export function createSession(ctx: Ctx, scope: Scope, input: NewSession): Promise<Session> {
  v.checkScope(scope);
  return runPlan(ctx, (plan) => prepareCreateSession(plan, scope, input));
}

export async function getSession(ctx: Ctx, scope: ReadScope, id: string): Promise<Session | null> {
  return withUser(
    ctx,
    scope,
    id,
    async (s) => {
      const json = await ctx.redis.hget(userKeys(ctx, s.tenant_id, s.user_id).session(id), 'd');
      if (json === null) return null;
      const session = JSON.parse(json) as Session;
      return isLive(session, ctx.clock.now()) ? session : null;
    },
    () => null,
  );
}

export function updateSession(ctx: Ctx, scope: ReadScope, id: string, expected: number, patch: SessionPatch) {
  v.checkReadScope(scope);
  v.version(expected);
  checkSessionPatch(patch);
  return withUser(
    ctx,
    scope,
    id,
    (s) => runPlan(ctx, (plan) => prepareUpdateSession(plan, s, id, expected, patch)),
    () => {
      throw notFound(id);
    },
  );
}

export function touchSession(ctx: Ctx, scope: ReadScope, id: string): Promise<Session | null> {
  return withUser(
    ctx,
    scope,
    id,
    (s) => runPlan(ctx, (plan) => prepareTouchSession(plan, s, id)),
    () => null,
  );
}

export function endSession(ctx: Ctx, scope: ReadScope, id: string): Promise<Session | null> {
  const end = async (plan: Plan, s: Scope): Promise<Session | null> => {
    const found = await readLiveSession(plan, s, id);
    if (found === null || found.session.status === 'ended') return found?.session ?? null;
    const at = isoAt(plan.ctx.clock.now());
    const next: Session = {
      ...found.session,
      status: 'ended',
      ended_at: at,
      updated_at: at,
      version: found.session.version + 1,
    };
    putSession(plan, s, next);
    return next;
  };
  return withUser(
    ctx,
    scope,
    id,
    (s) => runPlan(ctx, (plan) => end(plan, s)),
    () => null,
  );
}

export function deleteSession(ctx: Ctx, scope: ReadScope, id: string): Promise<boolean> {
  const remove = async (plan: Plan, s: Scope): Promise<boolean> => {
    const keys = userKeys(ctx, s.tenant_id, s.user_id);
    const row = await plan.read(keys.session(id));
    if (row === null) return false;
    const session = JSON.parse(row.json) as Session;
    const member = indexMember(session.created_at, id);
    plan.remove(keys.session(id));
    plan.write('DEL', keys.messages(id));
    plan.write('ZREM', keys.sessions(), member);
    const tenant = tenantKeys(ctx, s.tenant_id);
    plan.after.push(() =>
      Promise.all([
        ctx.redis.hdel(tenant.owners(), id),
        ctx.redis.zrem(tenant.sessions(), member),
        ctx.redis.zrem(tenant.sessionExpiry(), member),
        uncount(ctx, s.tenant_id, s.user_id, id),
      ]),
    );
    return isLive(session, ctx.clock.now());
  };
  return withUser(
    ctx,
    scope,
    id,
    (s) => runPlan(ctx, (plan) => remove(plan, s)),
    () => false,
  );
}
