/**
 * A chat store for AI SDK `useChat` back ends, over any agentstate store: a chat is a session of the
 * scope's user, its UI messages are the session's messages, and its streams are runs in the session's run
 * event log, so a client that comes back re-attaches from any instance that shares the store (no Redis,
 * no `resumable-stream`).
 *
 *   const chats = createChatStore({ store, scope: { tenant_id: 'acme', user_id: 'alice' } });
 *   // POST /api/chat  { id, message }
 *   const turn = await chats.startTurn(id, message);
 *   const result = streamText({ model, messages: await convertToModelMessages(turn.messages) });
 *   return createUIMessageStreamResponse({ stream: turn.stream(result.toUIMessageStream()) });
 *   // GET /api/chat/:id/stream
 *   const stream = await chats.resumeStream(id);
 *   return stream ? createUIMessageStreamResponse({ stream }) : new Response(null, { status: 204 });
 *
 * Do not pass the request's abort signal to `streamText`: a client that leaves is a disconnect, and the
 * answer goes on for the client that comes back.
 */
import {
  type FlexibleSchema,
  type ToolSet,
  type UIDataTypes,
  type UIMessage,
  type UIMessageChunk,
  validateUIMessages,
} from 'ai';
import { AgentStateError, invalidRequest } from '../../core/errors.js';
import { newId } from '../../core/ids.js';
import type { JsonValue } from '../../core/json.js';
import type { Scope, StateStore } from '../../store/types.js';
import { type ChunkBatching, chunkStream } from './chat-log.js';
import { plainJson, toRecord } from './chat-records.js';
import { recoverHeld, recoverIfDead, storedMessages } from './chat-recover.js';
import {
  activeStreamOf,
  type ChatEnv,
  LeaseKeeper,
  leaseName,
  requireChat,
  setActiveStream,
} from './chat-session.js';
import { ChatTurn } from './chat-turn.js';

export { closeCutOffParts, INTERRUPTED_TOOL_CALL } from './chat-records.js';
export { type ChatStreamOptions, ChatTurn } from './chat-turn.js';

export interface ChatStoreOptions {
  readonly store: StateStore;
  /** Every chat, read and write, is of this tenant and user. */
  readonly scope: Scope;
  /** The sliding TTL of a new chat's session (seconds); the store's default when absent. */
  readonly ttlSeconds?: number;
  /** The `agent` of a new chat's session. Default null. */
  readonly agent?: string | null;
  /**
   * How long a stream's writer holds the chat without renewing (ms; renewed every third of it). A writer
   * that died is recovered this long after its last renewal. Default 10 000.
   */
  readonly leaseMs?: number;
  /** How often a follower of another process's stream reads the store (ms). Default 100. */
  readonly pollMs?: number;
  /** Batching of a stream's chunks into run events (default: 50 ms or 100 characters). */
  readonly batching?: ChunkBatching;
}

/** What loadChat and startTurn validate messages with (the SDK's `validateUIMessages`). */
export interface ChatValidation {
  readonly tools?: ToolSet;
  readonly metadataSchema?: FlexibleSchema<unknown>;
  readonly dataSchemas?: { [name: string]: FlexibleSchema<unknown> };
}

export interface ChatStore {
  /** A new, empty chat: its id (a session id) is the `id` of the client's chat. */
  createChat(): Promise<string>;
  /** The chat's UI messages, oldest first, validated with the SDK's `validateUIMessages`. */
  loadChat(chatId: string, validation?: ChatValidation): Promise<UIMessage[]>;
  /**
   * Saves `message` (a user message, or the chat's last assistant message with a client's tool results: a
   * continuation) and claims the chat for one streamed answer. A stream of a writer that died is recovered
   * first; one still running elsewhere is a `conflict`.
   */
  startTurn(chatId: string, message: unknown, validation?: ChatValidation): Promise<ChatTurn>;
  /**
   * The chat's active stream from its first chunk (the SDK replays it on a client that comes back),
   * following new chunks until it ends; null when the chat has none.
   */
  resumeStream(chatId: string): Promise<ReadableStream<UIMessageChunk> | null>;
  /** The run id of the chat's active stream, or null. */
  activeStream(chatId: string): Promise<string | null>;
}

function positive(value: number | undefined, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value <= 0)
    throw invalidRequest(`createChatStore: ${name} must be a positive integer, got ${String(value)}`);
  return value;
}

async function validated(messages: UIMessage[], validation: ChatValidation): Promise<UIMessage[]> {
  if (messages.length === 0) return [];
  return validateUIMessages<UIMessage<unknown, UIDataTypes>>({
    messages,
    ...(validation.tools === undefined ? {} : { tools: validation.tools }),
    ...(validation.metadataSchema === undefined ? {} : { metadataSchema: validation.metadataSchema }),
    ...(validation.dataSchemas === undefined ? {} : { dataSchemas: validation.dataSchemas }),
  } as Parameters<typeof validateUIMessages>[0]) as Promise<UIMessage[]>;
}

class StoreOfChats implements ChatStore {
  constructor(
    private readonly env: ChatEnv,
    private readonly newChat: { readonly ttlSeconds?: number; readonly agent: string | null },
  ) {}

  async createChat(): Promise<string> {
    const session = await this.env.store.createSession(this.env.scope, {
      agent: this.newChat.agent,
      ...(this.newChat.ttlSeconds === undefined ? {} : { ttl_seconds: this.newChat.ttlSeconds }),
    });
    return session.id;
  }

  async loadChat(chatId: string, validation: ChatValidation = {}): Promise<UIMessage[]> {
    await requireChat(this.env, chatId);
    return validated(await storedMessages(this.env, chatId), validation);
  }

  async activeStream(chatId: string): Promise<string | null> {
    return activeStreamOf(await requireChat(this.env, chatId));
  }

  async startTurn(chatId: string, message: unknown, validation: ChatValidation = {}): Promise<ChatTurn> {
    await requireChat(this.env, chatId);
    const incoming = await this.checkMessage(message, validation);
    const runId = newId('run');
    const lease = await this.env.store.acquireLease(
      this.env.scope,
      leaseName(chatId),
      runId,
      this.env.leaseMs,
    );
    if (lease === null)
      throw new AgentStateError('conflict', `chat ${chatId} is streaming an answer; wait for its end`, {
        details: { chat_id: chatId },
      });
    const keeper = new LeaseKeeper(this.env, chatId, runId);
    try {
      const previous = await this.activeStream(chatId);
      if (previous !== null) await recoverHeld(this.env, chatId, previous);
      const history = await storedMessages(this.env, chatId);
      const last = history.at(-1);
      const continues = incoming.role === 'assistant';
      if (continues && last?.id !== incoming.id)
        throw invalidRequest(
          `chat ${chatId}: an assistant message must continue the chat's last message (${last?.id ?? 'none'}), got ${incoming.id}`,
        );
      if (!continues && history.some((m) => m.id === incoming.id))
        throw invalidRequest(`chat ${chatId}: message ${incoming.id} is already in the chat`);
      await this.env.store.appendMessages(this.env.scope, chatId, [toRecord(incoming, 0, incoming.parts)]);
      const messages = continues ? [...history.slice(0, -1), incoming] : [...history, incoming];
      await setActiveStream(this.env, chatId, runId);
      await this.env.store.appendRunEvents(this.env.scope, {
        session_id: chatId,
        run_id: runId,
        events: [
          {
            type: 'run.started',
            data: { chat_id: chatId, continues: continues ? (incoming as unknown as JsonValue) : null },
          },
        ],
      });
      return new ChatTurn({
        env: this.env,
        chatId,
        runId,
        messages,
        savedParts: continues ? incoming.parts.length : 0,
        lease: keeper,
      });
    } catch (error) {
      await keeper.release().catch(() => undefined);
      throw error;
    }
  }

  async resumeStream(chatId: string): Promise<ReadableStream<UIMessageChunk> | null> {
    const runId = await this.activeStream(chatId);
    if (runId === null) return null;
    return chunkStream({
      store: this.env.store,
      scope: this.env.scope,
      sessionId: chatId,
      runId,
      pollMs: this.env.pollMs,
      quietMs: this.env.leaseMs,
      onQuiet: async () => {
        await recoverIfDead(this.env, chatId, runId);
      },
    });
  }

  private async checkMessage(message: unknown, validation: ChatValidation): Promise<UIMessage> {
    let checked: UIMessage[];
    try {
      checked = await validated([plainJson(message) as UIMessage], validation);
    } catch (error) {
      throw invalidRequest(`the message is not a valid UI message: ${(error as Error).message}`);
    }
    const [first] = checked;
    if (first === undefined || first.role === 'system')
      throw invalidRequest('the message must be a user message (or an assistant message that continues)');
    return first;
  }
}

/** A chat store over `store` for the chats of `scope`. */
export function createChatStore(options: ChatStoreOptions): ChatStore {
  if (typeof options !== 'object' || options === null)
    throw invalidRequest('createChatStore: options must be an object with store and scope');
  const { store, scope } = options;
  if (typeof store?.appendRunEvents !== 'function')
    throw invalidRequest('createChatStore: store must be an agentstate StateStore (openStore)');
  if (typeof scope?.tenant_id !== 'string' || typeof scope.user_id !== 'string')
    throw invalidRequest('createChatStore: scope must have tenant_id and user_id');
  const env: ChatEnv = {
    store,
    scope,
    leaseMs: positive(options.leaseMs, 'leaseMs', 10_000),
    pollMs: positive(options.pollMs, 'pollMs', 100),
    batching: {
      flushMs: positive(options.batching?.flushMs, 'batching.flushMs', 50),
      flushChars: positive(options.batching?.flushChars, 'batching.flushChars', 100),
    },
  };
  return new StoreOfChats(env, {
    agent: options.agent ?? null,
    ...(options.ttlSeconds === undefined ? {} : { ttlSeconds: options.ttlSeconds }),
  });
}
