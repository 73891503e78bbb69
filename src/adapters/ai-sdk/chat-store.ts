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
import {
  type ApprovalDecision,
  applyDecisions,
  approvalConflict,
  type ChatApproval,
  checkDecision,
  listApprovals,
  recordDecision,
  settleChatStatus,
} from './chat-approvals.js';
import { resumeDurableTurn } from './chat-durable.js';
import { type ChunkBatching, chunkStream } from './chat-log.js';
import { plainJson, toRecord } from './chat-records.js';
import { recoverHeld, recoverIfDead, storedMessages } from './chat-recover.js';
import {
  activeStreamOf,
  type ChatAnswer,
  type ChatEnv,
  LeaseKeeper,
  leaseName,
  requireChat,
  setActiveStream,
} from './chat-session.js';
import { ChatTurn } from './chat-turn.js';

export { CHAT_RUN_NAME } from './chat-answer.js';
export {
  APPROVAL_ACTION_TYPE,
  APPROVED_NOT_RUN,
  type ApprovalDecision,
  type ChatApproval,
  UNANSWERED_APPROVAL,
} from './chat-approvals.js';
export { closeCutOffParts, INTERRUPTED_TOOL_CALL } from './chat-records.js';
export type { ChatAnswer, ChatAnswerInput } from './chat-session.js';
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
  /** The session's TTL while it waits for a person's approval (seconds). Default 86 400. */
  readonly waitingTtlSeconds?: number;
  /**
   * A turn's answer as a durable run (`turn.answer()`): `streamText` with `durableModel(ctx, ...)` and
   * `durableTools(ctx, ...)`, as its UI message stream. With it, a turn whose process died is resumed
   * (by `resumeStream` or the next `startTurn`) instead of being cut off.
   */
  readonly answer?: ChatAnswer;
}

/** A person's decision on an approval, for `resolveApproval`. */
export interface ApprovalAnswer extends ApprovalDecision {
  /** The `approval.id` of the tool part (`approval-requested`). */
  readonly approvalId: string;
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
  /**
   * The tool calls of the chat's last answer that need a person's approval and have not been carried out:
   * each with its action (PENDING while it waits) and the decision recorded so far (null: none yet).
   */
  pendingApprovals(chatId: string): Promise<ChatApproval[]>;
  /**
   * Records a person's decision on an approval of the chat (the same as resolving its action over HTTP
   * or in the inspector). A decision already recorded stays: the same one again is fine, another is a
   * `conflict`. The chat carries it out when it continues (`continueTurn`, or the client's next request).
   */
  resolveApproval(chatId: string, answer: ApprovalAnswer): Promise<ChatApproval>;
  /**
   * Continues the chat's last answer once every approval it waits on is decided (by `resolveApproval`,
   * `PATCH /v1/actions/{id}` or the inspector): a turn as `startTurn` gives, whose messages carry the
   * approval responses, so the SDK runs the approved calls and tells the model of the denied ones.
   * `conflict` while one still waits; `invalid_request` when the last answer waits on none.
   */
  continueTurn(chatId: string, validation?: ChatValidation): Promise<ChatTurn>;
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
    const messages = await storedMessages(this.env, chatId);
    const last = messages.at(-1);
    if (last !== undefined) {
      // Decisions made outside the chat (the inspector, the API) show on the tool calls they answer.
      const shown = await applyDecisions(this.env, chatId, last, 'read');
      messages[messages.length - 1] = shown.message;
    }
    return validated(messages, validation);
  }

  async pendingApprovals(chatId: string): Promise<ChatApproval[]> {
    await requireChat(this.env, chatId);
    return listApprovals(this.env, chatId, (await storedMessages(this.env, chatId)).at(-1));
  }

  async resolveApproval(chatId: string, answer: ApprovalAnswer): Promise<ChatApproval> {
    const { approvalId, ...decision } = checkDecision(answer);
    const approvals = await this.pendingApprovals(chatId);
    const approval = approvals.find((a) => a.approvalId === approvalId);
    if (approval === undefined)
      throw new AgentStateError(
        'not_found',
        `chat ${chatId}: no approval ${approvalId} waits in the chat's last answer`,
        { details: { chat_id: chatId, approval_id: approvalId } },
      );
    const action = await this.env.store.getAction(this.env.scope, approval.actionId);
    if (action === null) throw new AgentStateError('not_found', `action ${approval.actionId} is gone`);
    const recorded = await recordDecision(this.env, action, decision, `by user ${this.env.scope.user_id}`);
    if (recorded.approved !== decision.approved)
      throw approvalConflict(chatId, { ...approval, decision: recorded }, decision.approved);
    return { ...approval, decision: recorded };
  }

  async continueTurn(chatId: string, validation: ChatValidation = {}): Promise<ChatTurn> {
    await requireChat(this.env, chatId);
    const last = (await storedMessages(this.env, chatId)).at(-1);
    const approvals = await listApprovals(this.env, chatId, last);
    if (last === undefined || approvals.length === 0)
      throw invalidRequest(`chat ${chatId}: its last answer waits on no approval; send a message instead`);
    const waiting = approvals.filter((a) => a.decision === null);
    if (waiting.length > 0)
      throw new AgentStateError(
        'conflict',
        `chat ${chatId}: ${waiting.map((a) => `${a.toolName} (${a.approvalId})`).join(', ')} still waits for approval`,
        { details: { chat_id: chatId, action_ids: waiting.map((a) => a.actionId) } },
      );
    const { message } = await applyDecisions(this.env, chatId, last, 'read');
    return this.startTurn(chatId, message, validation);
  }

  async activeStream(chatId: string): Promise<string | null> {
    return activeStreamOf(await requireChat(this.env, chatId));
  }

  async startTurn(chatId: string, message: unknown, validation: ChatValidation = {}): Promise<ChatTurn> {
    const session = await requireChat(this.env, chatId);
    let incoming = await this.checkMessage(message, validation);
    const before = activeStreamOf(session);
    if (before !== null) {
      // A durable turn whose process died is finished first: the new message follows its whole answer.
      const resumed = await resumeDurableTurn(this.env, chatId, before);
      if (resumed !== null) await resumed.done;
    }
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
      // Approvals: the client's answers recorded, the store's decisions carried into the message; a new
      // user message closes the last answer's approvals first (the model accepts no open tool call).
      const records = [];
      if (continues) {
        incoming = (await applyDecisions(this.env, chatId, incoming, 'continue')).message;
      } else if (last !== undefined) {
        const closed = await applyDecisions(this.env, chatId, last, 'close');
        if (closed.changed) {
          records.push(toRecord(closed.message, 0, closed.message.parts));
          history[history.length - 1] = closed.message;
        }
      }
      records.push(toRecord(incoming, 0, incoming.parts));
      await this.env.store.appendMessages(this.env.scope, chatId, records);
      const messages = continues ? [...history.slice(0, -1), incoming] : [...history, incoming];
      const waits = incoming.parts.some((p) => 'approval' in p && p.state === 'approval-requested');
      await settleChatStatus(this.env, chatId, waits);
      await setActiveStream(this.env, chatId, runId);
      await this.env.store.appendRunEvents(this.env.scope, {
        session_id: chatId,
        run_id: runId,
        events: [
          {
            type: 'run.started',
            data: {
              chat_id: chatId,
              continues: continues ? (incoming as unknown as JsonValue) : null,
              answers: incoming.id,
              turn_id: runId,
            },
          },
        ],
      });
      return new ChatTurn({
        env: this.env,
        chatId,
        runId,
        messages,
        savedParts: continues ? incoming.parts : [],
        lease: keeper,
      });
    } catch (error) {
      await keeper.release().catch(() => undefined);
      throw error;
    }
  }

  async resumeStream(chatId: string): Promise<ReadableStream<UIMessageChunk> | null> {
    let runId = await this.activeStream(chatId);
    if (runId === null) return null;
    // A durable turn whose writer is gone is resumed before the client follows it, from its first chunk.
    const resumed = await resumeDurableTurn(this.env, chatId, runId);
    if (resumed !== null) runId = resumed.runId;
    return chunkStream({
      store: this.env.store,
      scope: this.env.scope,
      sessionId: chatId,
      runId,
      pollMs: this.env.pollMs,
      quietMs: this.env.leaseMs,
      onQuiet: async (quiet) => {
        if ((await resumeDurableTurn(this.env, chatId, quiet)) === null)
          await recoverIfDead(this.env, chatId, quiet);
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

function checkAnswer(answer: unknown): ChatAnswer {
  if (typeof answer !== 'function')
    throw invalidRequest('createChatStore: answer must be a function ({ ctx, chatId, messages }) => stream');
  return answer as ChatAnswer;
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
    ...(options.ttlSeconds === undefined
      ? {}
      : { ttlSeconds: positive(options.ttlSeconds, 'ttlSeconds', 1) }),
    ...(options.waitingTtlSeconds === undefined
      ? {}
      : { waitingTtlSeconds: positive(options.waitingTtlSeconds, 'waitingTtlSeconds', 1) }),
    ...(options.answer === undefined ? {} : { answer: checkAnswer(options.answer) }),
  };
  return new StoreOfChats(env, {
    agent: options.agent ?? null,
    ...(options.ttlSeconds === undefined ? {} : { ttlSeconds: options.ttlSeconds }),
  });
}
