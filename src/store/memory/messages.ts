/** Messages: a gap-free seq per session; appending renews the session's TTL (not its version). */
import { isoAt } from '../../core/clock.js';
import { newId } from '../../core/ids.js';
import { MESSAGE_ROLES, type Message, type ToolCall } from '../../core/model.js';
import {
  MESSAGE_FIELDS,
  TOOL_CALL_FIELDS,
  unknownField,
  unknownFieldMessage,
} from '../shared/known-fields.js';
import type { MessageQuery, NewMessage, ReadScope } from '../types.js';
import { type Ctx, copy } from './db.js';
import { liveSession, putSession, renewed, requireSession } from './sessions.js';
import {
  checkId,
  checkReadScope,
  fail,
  json,
  jsonObject,
  limit,
  name,
  nonNegativeInt,
  oneOf,
  record,
  text,
} from './validate.js';

export const MAX_MESSAGE_LIMIT = 1000;

/** A message as checked input: everything but the parts the store assigns. */
export type CheckedMessage = Omit<
  Message,
  'id' | 'tenant_id' | 'user_id' | 'session_id' | 'seq' | 'created_at'
>;

function checkToolCalls(value: unknown, path: string): ToolCall[] | null {
  if (value === undefined || value === null) return null;
  if (!Array.isArray(value)) fail(`${path} must be an array or null`);
  return value.map((call: unknown, i) => {
    record(call, `${path}[${i}]`);
    const extra = unknownField(call as object, TOOL_CALL_FIELDS);
    if (extra !== null) fail(unknownFieldMessage(`${path}[${i}]`, extra, TOOL_CALL_FIELDS));
    const { id, name: fn, arguments: args } = call as ToolCall;
    return {
      id: name(id, `${path}[${i}].id`),
      name: name(fn, `${path}[${i}].name`),
      arguments: json(args, `${path}[${i}].arguments`),
    };
  });
}

export function checkMessages(items: readonly NewMessage[], path: string): CheckedMessage[] {
  if (!Array.isArray(items)) fail(`${path} must be an array of messages`);
  return items.map((item: NewMessage, i) => {
    const at = `${path}[${i}]`;
    record(item, at);
    const extra = unknownField(item, MESSAGE_FIELDS);
    if (extra !== null) fail(unknownFieldMessage(at, extra, MESSAGE_FIELDS));
    return {
      role: oneOf(item.role, MESSAGE_ROLES, `${at}.role`),
      content: text(item.content, `${at}.content`),
      name: item.name === undefined || item.name === null ? null : name(item.name, `${at}.name`),
      tool_calls: checkToolCalls(item.tool_calls, `${at}.tool_calls`),
      tool_call_id:
        item.tool_call_id === undefined || item.tool_call_id === null
          ? null
          : name(item.tool_call_id, `${at}.tool_call_id`),
      metadata: item.metadata === undefined ? {} : jsonObject(item.metadata, `${at}.metadata`),
    };
  });
}

/** Appends checked messages to a live session in scope and renews its TTL. */
export function appendChecked(
  c: Ctx,
  scope: ReadScope,
  session_id: string,
  items: CheckedMessage[],
): Message[] {
  const row = requireSession(c, scope, session_id);
  if (items.length === 0) return [];
  const existing = c.t.messages.get(session_id) ?? [];
  const at = isoAt(c.now);
  const added = items.map<Message>((item, i) => ({
    id: newId('message', c.random),
    tenant_id: row.rec.tenant_id,
    user_id: row.rec.user_id,
    session_id,
    seq: existing.length + i + 1,
    ...item,
    created_at: at,
  }));
  // In place, not a new list: an append costs what it adds, not the conversation's length.
  c.tx.append(c.t.messages, session_id, added);
  const current = c.t.sessions.get(session_id) ?? row;
  putSession(c, current, renewed(c, current.rec));
  return added;
}

export function appendMessages(
  c: Ctx,
  scope: ReadScope,
  session_id: string,
  items: readonly NewMessage[],
): Message[] {
  checkReadScope(scope);
  checkId(session_id, 'session', 'session id');
  const checked = checkMessages(items, 'messages');
  return copy(appendChecked(c, scope, session_id, checked));
}

export function listMessages(
  c: Ctx,
  scope: ReadScope,
  session_id: string,
  query: MessageQuery = {},
): Message[] {
  checkReadScope(scope);
  checkId(session_id, 'session', 'session id');
  record(query, 'query');
  const after = query.after_seq === undefined ? 0 : nonNegativeInt(query.after_seq, 'after_seq');
  const n = limit(query.limit, 'limit', 100, MAX_MESSAGE_LIMIT);
  if (liveSession(c, scope, session_id) === null) return [];
  const all = c.t.messages.get(session_id) ?? [];
  return copy(all.slice(after, after + n));
}

export function lastMessages(c: Ctx, scope: ReadScope, session_id: string, n: number): Message[] {
  checkReadScope(scope);
  checkId(session_id, 'session', 'session id');
  const count = limit(n, 'n', 1, MAX_MESSAGE_LIMIT);
  if (liveSession(c, scope, session_id) === null) return [];
  const all = c.t.messages.get(session_id) ?? [];
  return copy(all.slice(Math.max(0, all.length - count)));
}
