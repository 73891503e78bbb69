/**
 * Messages: one list per session (index = seq - 1), with the session's TTL. The seq comes from the
 * session's counter `n`, incremented by the same script that appends, so seqs are gap-free.
 */
import { isoAt } from '../../core/clock.js';
import { AgentStateError, invalidRequest } from '../../core/errors.js';
import { newId } from '../../core/ids.js';
import {
  MESSAGE_ROLES,
  type Message,
  OPEN_TASK_STATES,
  type Session,
  type ToolCall,
} from '../../core/model.js';
import {
  MESSAGE_FIELDS,
  SESSION_HEAD_FIELDS,
  TOOL_CALL_FIELDS,
  unknownField,
  unknownFieldMessage,
} from '../shared/known-fields.js';
import { checkNextRunOption, composeNextRun } from '../shared/next-run.js';
import {
  MAX_PAGE_LIMIT,
  type MessageQuery,
  type NewMessage,
  type ReadScope,
  type Scope,
  type SessionHead,
  type SessionHeadOptions,
} from '../types.js';
import { latestCheckpoint } from './checkpoints.js';
import { type Ctx, type Plan, runPlan } from './plan.js';
import { inOwnerScope, nativeTtlMs, userKeys } from './scope.js';
import { getSession, isLive, prepareTouchSession } from './sessions.js';
import { listTasks } from './tasks.js';
import * as v from './validate.js';

export const MAX_MESSAGES_PER_APPEND = 1000;

function checkToolCalls(value: unknown, path: string): ToolCall[] | null {
  if (value === undefined || value === null) return null;
  if (!Array.isArray(value)) throw invalidRequest(`[redis] ${path} must be an array or null`);
  return value.map((call: unknown, i) => {
    const at = `${path}[${i}]`;
    if (typeof call !== 'object' || call === null) throw invalidRequest(`[redis] ${at} must be an object`);
    const extra = unknownField(call, TOOL_CALL_FIELDS);
    if (extra !== null) throw invalidRequest(`[redis] ${unknownFieldMessage(at, extra, TOOL_CALL_FIELDS)}`);
    const { id, name, arguments: args } = call as Record<string, unknown>;
    return {
      id: v.text(id, `${at}.id`),
      name: v.text(name, `${at}.name`),
      arguments: v.jsonValue(args, `${at}.arguments`),
    };
  });
}

/** Checks new messages before anything is read or written. */
export function checkMessages(messages: readonly NewMessage[]): void {
  if (!Array.isArray(messages)) throw invalidRequest('[redis] messages must be an array');
  if (messages.length > MAX_MESSAGES_PER_APPEND) {
    throw invalidRequest(`[redis] at most ${MAX_MESSAGES_PER_APPEND} messages per append`);
  }
  messages.forEach((m: NewMessage, i) => {
    const path = `messages[${i}]`;
    if (typeof m !== 'object' || m === null) throw invalidRequest(`[redis] ${path} must be an object`);
    const extra = unknownField(m, MESSAGE_FIELDS);
    if (extra !== null) throw invalidRequest(`[redis] ${unknownFieldMessage(path, extra, MESSAGE_FIELDS)}`);
    v.oneOf(m.role, MESSAGE_ROLES, `${path}.role`);
    v.text(m.content, `${path}.content`, v.MAX_TEXT_LENGTH, true);
    v.nullableText(m.name, `${path}.name`);
    checkToolCalls(m.tool_calls, `${path}.tool_calls`);
    v.nullableText(m.tool_call_id, `${path}.tool_call_id`);
    if (m.metadata !== undefined) v.jsonObject(m.metadata, `${path}.metadata`);
  });
}

/** Appends to a live session (renewing its TTL) in the plan; not_found when it is missing or expired. */
export async function prepareAppend(
  plan: Plan,
  scope: Scope,
  sessionId: string,
  messages: readonly NewMessage[],
): Promise<{ session: Session; messages: Message[] }> {
  const session = await prepareTouchSession(plan, scope, sessionId);
  if (session === null) throw new AgentStateError('not_found', `[redis] session ${sessionId} not found`);
  if (messages.length === 0) return { session, messages: [] };
  const keys = userKeys(plan.ctx, scope.tenant_id, scope.user_id);
  const first = plan.bump(keys.session(sessionId), 'n', messages.length) - messages.length + 1;
  const at = isoAt(plan.ctx.clock.now());
  const out = messages.map(
    (m, i): Message => ({
      id: newId('message', plan.ctx.random),
      tenant_id: scope.tenant_id,
      user_id: scope.user_id,
      session_id: sessionId,
      seq: first + i,
      role: m.role,
      content: m.content,
      name: m.name ?? null,
      tool_calls: checkToolCalls(m.tool_calls, 'tool_calls'),
      tool_call_id: m.tool_call_id ?? null,
      metadata: m.metadata === undefined ? {} : structuredClone(m.metadata),
      created_at: at,
    }),
  );
  // Stored without tenant, user and session ids (the key holds them): about 130 bytes less per message.
  const compact = out.map(({ tenant_id: _t, user_id: _u, session_id: _s, ...rest }) => JSON.stringify(rest));
  plan.write('RPUSH', keys.messages(sessionId), ...compact);
  // The list may be new: give it the session's TTL, which the touch above set on the session.
  const ttl = nativeTtlMs(Date.parse(session.expires_at), plan.ctx.clock.now(), session.ttl_seconds);
  plan.write('PEXPIRE', keys.messages(sessionId), ttl);
  return { session, messages: out };
}

export function appendMessages(
  ctx: Ctx,
  scope: ReadScope,
  sessionId: string,
  messages: readonly NewMessage[],
): Promise<Message[]> {
  checkMessages(messages);
  const missing = () => {
    throw new AgentStateError('not_found', `[redis] session ${sessionId} not found`);
  };
  return inOwnerScope(
    ctx,
    scope,
    sessionId,
    'session',
    (s) => runPlan(ctx, async (plan) => (await prepareAppend(plan, s, sessionId, messages)).messages),
    missing,
  );
}

/** Reads a range of a live session's list (LRANGE indexes) in one round trip with the session. */
async function range(ctx: Ctx, scope: ReadScope, sessionId: string, start: number, stop: number) {
  return inOwnerScope(
    ctx,
    scope,
    sessionId,
    'session',
    async (s) => {
      const keys = userKeys(ctx, s.tenant_id, s.user_id);
      const [json, rows] = await Promise.all([
        ctx.redis.hget(keys.session(sessionId), 'd'),
        ctx.redis.lrange(keys.messages(sessionId), start, stop),
      ]);
      if (json === null || !isLive(JSON.parse(json) as Session, ctx.clock.now())) return [];
      const owner = { tenant_id: s.tenant_id, user_id: s.user_id, session_id: sessionId };
      return rows.map((row) => ({ ...owner, ...(JSON.parse(row) as Omit<Message, keyof typeof owner>) }));
    },
    (): Message[] => [],
  );
}

export function listMessages(ctx: Ctx, scope: ReadScope, sessionId: string, query: MessageQuery = {}) {
  const after =
    query.after_seq === undefined ? 0 : v.integer(query.after_seq, 'after_seq', 0, Number.MAX_SAFE_INTEGER);
  const limit = v.limit(query.limit, 100, 1000);
  return range(ctx, scope, sessionId, after, after + limit - 1);
}

export async function lastMessages(
  ctx: Ctx,
  scope: ReadScope,
  sessionId: string,
  n: number,
): Promise<Message[]> {
  const count = v.integer(n, 'n', 1, 1000);
  return range(ctx, scope, sessionId, -count, -1);
}

/**
 * The session and its newest message: two reads (the session's, then its list's last item); with
 * `open_tasks`, the scope's open tasks as listTasks gives them.
 */
export async function getSessionHead(
  ctx: Ctx,
  scope: ReadScope,
  id: string,
  options: SessionHeadOptions = {},
): Promise<SessionHead | null> {
  if (typeof options !== 'object' || options === null)
    throw invalidRequest('[redis] options must be an object');
  v.knownFields(options, SESSION_HEAD_FIELDS, 'options');
  const openTasks =
    options.open_tasks === undefined
      ? null
      : v.integer(options.open_tasks, 'options.open_tasks', 1, MAX_PAGE_LIMIT);
  const nextRun = checkNextRunOption(options.next_run, '[redis] ');
  const session = await getSession(ctx, scope, id);
  if (session === null) return null;
  const last = (await lastMessages(ctx, scope, id, 1))[0] ?? null;
  let head: SessionHead = { session, last_message: last };
  if (openTasks !== null) {
    const open = await listTasks(ctx, scope, { state: OPEN_TASK_STATES, limit: openTasks });
    head = { ...head, open_tasks: open.items };
  }
  if (!nextRun) return head;
  const next = await composeNextRun(id, last?.seq ?? 0, (run) => latestCheckpoint(ctx, scope, run));
  return { ...head, next_run: next };
}
