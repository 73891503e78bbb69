/** Messages: a gap-free seq per session; appending renews the session's TTL (not its version). */
import { isoAt } from '../../core/clock.js';
import { newId } from '../../core/ids.js';
import { MESSAGE_ROLES, type Message, type Session, type ToolCall } from '../../core/model.js';
import { MESSAGE_FIELDS, TOOL_CALL_FIELDS } from '../shared/known-fields.js';
import type { MessageQuery, NewMessage, ReadScope } from '../types.js';
import type { CoreEnv, Op, WriteOp } from './context.js';
import { readLastMessages, readMessages, shownSeq } from './history.js';
import { liveSession, renewed, replaceSession, requireSession } from './sessions.js';

export const MAX_MESSAGE_LIMIT = 1000;

/** A message as checked input: everything but the parts the store assigns. */
export type CheckedMessage = Omit<
  Message,
  'id' | 'tenant_id' | 'user_id' | 'session_id' | 'seq' | 'created_at'
>;

function checkToolCalls(env: CoreEnv, value: unknown, path: string): ToolCall[] | null {
  const { v } = env;
  if (value === undefined || value === null) return null;
  if (!Array.isArray(value)) return v.fail(`${path} must be an array or null`);
  return (value as unknown[]).map((call: unknown, i) => {
    v.record(call, `${path}[${i}]`, TOOL_CALL_FIELDS);
    const { id, name: fn, arguments: args } = call as ToolCall;
    return {
      id: v.name(id, `${path}[${i}].id`),
      name: v.name(fn, `${path}[${i}].name`),
      arguments: v.json(args, `${path}[${i}].arguments`),
    };
  });
}

export function checkMessages(env: CoreEnv, items: readonly NewMessage[], path: string): CheckedMessage[] {
  const { v } = env;
  if (!Array.isArray(items)) v.fail(`${path} must be an array of messages`);
  return items.map((item: NewMessage, i) => {
    const at = `${path}[${i}]`;
    v.record(item, at, MESSAGE_FIELDS);
    return {
      role: v.oneOf(item.role, MESSAGE_ROLES, `${at}.role`),
      content: v.text(item.content, `${at}.content`),
      name: item.name === undefined || item.name === null ? null : v.name(item.name, `${at}.name`),
      tool_calls: checkToolCalls(env, item.tool_calls, `${at}.tool_calls`),
      tool_call_id:
        item.tool_call_id === undefined || item.tool_call_id === null
          ? null
          : v.name(item.tool_call_id, `${at}.tool_call_id`),
      metadata: item.metadata === undefined ? {} : v.jsonObject(item.metadata, `${at}.metadata`),
    };
  });
}

/**
 * Appends checked messages to a live session in scope and renews its TTL; returns the messages and the
 * session as it is after.
 */
export async function appendChecked(
  op: WriteOp,
  scope: ReadScope,
  session_id: string,
  items: readonly CheckedMessage[],
): Promise<{ messages: Message[]; session: Session }> {
  const session = await requireSession(op, scope, session_id);
  if (items.length === 0) return { messages: [], session };
  const count = await op.tx.messageCount(session);
  const at = isoAt(op.now);
  const added = items.map<Message>((item, i) => ({
    id: newId('message', op.env.random),
    tenant_id: session.tenant_id,
    user_id: session.user_id,
    session_id,
    seq: count + i + 1,
    ...item,
    created_at: at,
  }));
  await op.tx.appendMessages(session, added);
  const after = await replaceSession(op, renewed(op.now, session), session);
  // Stored under the session's own line; a fork or a rewound session shows them after its history.
  const shown =
    session.history === undefined ? added : added.map((m) => ({ ...m, seq: shownSeq(session, m.seq) }));
  return { messages: shown, session: after };
}

export function checkMessageQuery(env: CoreEnv, query: MessageQuery): { after: number; limit: number } {
  const { v } = env;
  v.record(query, 'query');
  return {
    after: query.after_seq === undefined ? 0 : v.nonNegativeInt(query.after_seq, 'after_seq'),
    limit: v.limit(query.limit, 'limit', 100, MAX_MESSAGE_LIMIT),
  };
}

export async function listMessages(
  op: Op,
  scope: ReadScope,
  session_id: string,
  query: { after: number; limit: number },
): Promise<Message[]> {
  const session = await liveSession(op, scope, session_id);
  return session === null ? [] : readMessages(op, session, query.after, query.limit);
}

export async function lastMessages(
  op: Op,
  scope: ReadScope,
  session_id: string,
  n: number,
): Promise<Message[]> {
  const session = await liveSession(op, scope, session_id);
  return session === null ? [] : readLastMessages(op, session, n);
}
