/** Messages: a session's conversation, in order. */
import type { JsonObject } from '../../core/json.js';
import type { Message, MessageRole, ToolCall } from '../../core/model.js';
import type { ReadScope } from './common.js';

export interface NewMessage {
  readonly role: MessageRole;
  readonly content: string;
  readonly name?: string | null;
  readonly tool_calls?: ToolCall[] | null;
  readonly tool_call_id?: string | null;
  readonly metadata?: JsonObject;
}

export interface MessageQuery {
  /** Messages with seq > after_seq; default 0 (from the first); at most 2 147 483 647. */
  readonly after_seq?: number;
  /** 1..1000; default 100. */
  readonly limit?: number;
}

/** Each session's seq starts at 1 and has no gaps; appending renews the session's TTL. */
export interface MessageCalls {
  appendMessages(scope: ReadScope, session_id: string, messages: readonly NewMessage[]): Promise<Message[]>;
  listMessages(scope: ReadScope, session_id: string, query?: MessageQuery): Promise<Message[]>;
  /** The last `n` messages in ascending seq order. */
  lastMessages(scope: ReadScope, session_id: string, n: number): Promise<Message[]>;
}
