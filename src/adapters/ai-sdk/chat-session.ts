/**
 * What a chat keeps on its session: the id of its active stream (the run whose chunks a client that
 * comes back re-attaches to), in `context.ai_sdk_chat.active_stream_id`, and the lease that says a
 * process is still writing that stream (renewed while it runs, so a crashed writer's lease runs out).
 */
import type { UIMessage, UIMessageChunk } from 'ai';
import { AgentStateError, invalidRequest, isAgentStateError } from '../../core/errors.js';
import { isId } from '../../core/ids.js';
import type { JsonObject } from '../../core/json.js';
import type { Session } from '../../core/model.js';
import type { DurableContext } from '../../durable/types.js';
import type { Scope, StateStore } from '../../store/types.js';
import type { ChunkBatching } from './chat-log.js';

export const CONTEXT_KEY = 'ai_sdk_chat';

/** What every part of a chat store shares. */
export interface ChatEnv {
  readonly store: StateStore;
  readonly scope: Scope;
  readonly leaseMs: number;
  readonly pollMs: number;
  readonly batching: ChunkBatching;
  /** The sliding TTL of the chat's session while it is active (seconds); the policy's default when absent. */
  readonly ttlSeconds?: number;
  /** The session's TTL while it waits for an approval (seconds); the policy's default when absent. */
  readonly waitingTtlSeconds?: number;
  /** How a turn answers as a durable run (`ChatTurn.answer`), and how a crashed one is resumed. */
  readonly answer?: ChatAnswer;
}

export interface ChatAnswerInput {
  /** The turn's durable run: give it to `durableModel` and `durableTools`. */
  readonly ctx: DurableContext;
  readonly chatId: string;
  /** The chat's messages, ending with the message the turn answers (for `convertToModelMessages`). */
  readonly messages: UIMessage[];
}

/**
 * A turn's answer: `streamText` with `durableModel(ctx, ...)` and `durableTools(ctx, ...)`, as its UI
 * message stream (`result.toUIMessageStream()`). Called again, in a resumed run, for a turn whose process
 * died: recorded model answers are replayed and no recorded tool call is made twice.
 */
export type ChatAnswer = (
  input: ChatAnswerInput,
) => ReadableStream<UIMessageChunk> | PromiseLike<ReadableStream<UIMessageChunk>>;

export function leaseName(chatId: string): string {
  return `ai-sdk-chat:${chatId}`;
}

/** Refuses a chat id that is not a session id (an id from `createChat`). */
export function checkChatId(chatId: unknown): string {
  if (typeof chatId !== 'string' || !isId(chatId, 'session'))
    throw invalidRequest(
      `chat id must be a session id (sess_…, as createChat gives), got ${JSON.stringify(chatId) ?? String(chatId)}`,
    );
  return chatId;
}

export async function requireChat(env: ChatEnv, chatId: string): Promise<Session> {
  const session = await env.store.getSession(env.scope, checkChatId(chatId));
  if (session === null)
    throw new AgentStateError('not_found', `chat ${chatId} does not exist (or has expired)`, {
      details: { chat_id: chatId },
    });
  return session;
}

export function activeStreamOf(session: Session): string | null {
  const kept = session.context[CONTEXT_KEY];
  if (typeof kept !== 'object' || kept === null || Array.isArray(kept)) return null;
  const id = (kept as JsonObject).active_stream_id;
  return typeof id === 'string' ? id : null;
}

/**
 * Sets the chat's active stream to `runId` (or clears it with null). With `onlyIf`, changes it only while it
 * is still that run (a finished stream does not clear a newer one). Retries a session another writer moved.
 */
export async function setActiveStream(
  env: ChatEnv,
  chatId: string,
  runId: string | null,
  onlyIf?: string,
): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    const session = await requireChat(env, chatId);
    const current = activeStreamOf(session);
    if (onlyIf !== undefined && current !== onlyIf) return;
    if (current === runId) return;
    const context: JsonObject = { ...session.context, [CONTEXT_KEY]: { active_stream_id: runId } };
    try {
      await env.store.updateSession(env.scope, chatId, session.version, { context });
      return;
    } catch (error) {
      if (!isAgentStateError(error, 'version_conflict') || attempt >= 8) throw error;
    }
  }
}

/** Keeps the chat's lease for `owner` while a stream runs; `lost` turns true if another took it over. */
export class LeaseKeeper {
  lost = false;
  private readonly timer: NodeJS.Timeout;
  private renewing: Promise<void> = Promise.resolve();

  constructor(
    private readonly env: ChatEnv,
    private readonly chatId: string,
    private readonly owner: string,
  ) {
    this.timer = setInterval(
      () => {
        this.renewing = this.renew();
      },
      Math.max(50, Math.floor(env.leaseMs / 3)),
    );
  }

  private async renew(): Promise<void> {
    try {
      const lease = await this.env.store.acquireLease(
        this.env.scope,
        leaseName(this.chatId),
        this.owner,
        this.env.leaseMs,
      );
      if (lease === null) this.lost = true;
    } catch {
      // A store that does not answer now may answer at the next renewal, before the lease runs out.
    }
  }

  async release(): Promise<void> {
    clearInterval(this.timer);
    await this.renewing;
    await this.env.store.releaseLease(this.env.scope, leaseName(this.chatId), this.owner);
  }
}
