/**
 * One streamed answer of a chat. `stream(result.toUIMessageStream())` wraps the SDK's UI message stream
 * (createUIMessageStream, so the answer gets its message id and per-step callbacks), reads it to its end
 * and hands each chunk to the run event log (in batches) and to the client's stream. A client that leaves
 * (a reload, a lost connection) cancels only its own stream and stops nothing: the answer goes on, each
 * finished step is appended to the session's messages in one `appendMessages`, and the end writes the
 * run's final event, clears the chat's active stream and frees its lease. An answer cut short (aborted, or its model failed mid-step) keeps what it had, closed
 * with closeCutOffParts.
 */
import { createUIMessageStream, generateId, type UIMessage, type UIMessageChunk } from 'ai';
import { invalidRequest } from '../../core/errors.js';
import type { NewRunEvent } from '../../store/types.js';
import { answerDurably } from './chat-answer.js';
import { saveWithApprovals } from './chat-approvals.js';
import { ChunkLog } from './chat-log.js';
import {
  closeCutOffParts,
  firstChange,
  hasContent,
  plainJson,
  toRecord,
  type UIPart,
} from './chat-records.js';
import { type ChatEnv, type LeaseKeeper, setActiveStream } from './chat-session.js';

export interface ChatStreamOptions {
  /** The id of a new answer's message. Default: the SDK's `generateId`. */
  readonly generateMessageId?: () => string;
  /** The error text a client sees for an error of the stream. Default: the SDK's "An error occurred.". */
  readonly onError?: (error: unknown) => string;
}

export interface ChatTurnInit {
  readonly env: ChatEnv;
  readonly chatId: string;
  readonly runId: string;
  /** The turn's id (its durable run's key): the run id of its first stream. Default `runId`. */
  readonly turnId?: string;
  readonly messages: UIMessage[];
  /** Parts of the answer's message already stored (a continuation's), none for a new answer. */
  readonly savedParts: readonly UIPart[];
  readonly lease: LeaseKeeper;
}

interface ClientSink {
  chunk(chunk: UIMessageChunk): void;
  end(error: unknown): void;
}

type Ending = { readonly type: NewRunEvent['type']; readonly cutOff: boolean };

/** A turn of a chat: its messages for the model, and the stream that stores its answer. */
export class ChatTurn {
  readonly chatId: string;
  /** The run of the turn's stream in the session's run event log. */
  readonly runId: string;
  /** The turn's id: its first stream's run id, kept by a stream that resumes it after a crash. */
  readonly turnId: string;
  /** The chat's messages, ending with the message this turn answers. */
  readonly messages: UIMessage[];
  /** Settles once everything of the turn is stored (or storing it failed: then it rejects). */
  readonly done: Promise<void>;
  private settle!: (error?: unknown) => void;
  private started = false;
  private saved: readonly UIPart[];
  private ending: Ending = { type: 'run.failed', cutOff: true };
  private readonly log: ChunkLog;

  constructor(private readonly init: ChatTurnInit) {
    this.chatId = init.chatId;
    this.runId = init.runId;
    this.turnId = init.turnId ?? init.runId;
    this.messages = init.messages;
    this.saved = plainJson(init.savedParts);
    this.log = new ChunkLog(init.env.store, init.env.scope, init.chatId, init.runId, init.env.batching);
    this.done = new Promise<void>((resolve, reject) => {
      this.settle = (error) => (error === undefined ? resolve() : reject(error));
    });
    this.done.catch(() => undefined);
  }

  /**
   * Stores `source` (`streamText(...).toUIMessageStream()`, or any UI message stream of the answer) as it
   * comes, and gives the stream to send to the client. Call it once.
   */
  stream(
    source: ReadableStream<UIMessageChunk>,
    options: ChatStreamOptions = {},
  ): ReadableStream<UIMessageChunk> {
    if (this.started) throw invalidRequest(`chat ${this.chatId}: the turn's stream was already started`);
    this.started = true;
    const answer = createUIMessageStream<UIMessage>({
      originalMessages: this.messages,
      generateId: options.generateMessageId ?? generateId,
      ...(options.onError === undefined ? {} : { onError: options.onError }),
      execute: ({ writer }) => writer.merge(source),
      onStepFinish: ({ responseMessage }) => this.save(responseMessage, false),
      onFinish: async ({ responseMessage, isAborted, outcome }) => {
        const cutOff = isAborted || outcome.status === 'failed';
        this.ending = {
          type: isAborted ? 'run.cancelled' : cutOff ? 'run.failed' : 'run.completed',
          cutOff,
        };
        await this.save(responseMessage, cutOff);
      },
    });
    const client: { open: ReadableStreamDefaultController<UIMessageChunk> | null } = { open: null };
    const toClient = new ReadableStream<UIMessageChunk>({
      start(controller) {
        client.open = controller;
      },
      cancel() {
        client.open = null; // the client left; the answer goes on
      },
    });
    void this.drain(answer, {
      chunk: (chunk) => client.open?.enqueue(chunk),
      end: (error) => {
        if (error === undefined) client.open?.close();
        else client.open?.error(error);
      },
    });
    return toClient;
  }

  /**
   * Runs the chat store's `answer` as the turn's durable run (one run per turn, keyed by the turn's id),
   * stores its stream as `stream` does, and gives the stream to send to the client. A turn whose process
   * dies is resumed from its run (`resumeStream`, `startTurn`): no recorded tool call is made twice.
   */
  answer(options: ChatStreamOptions = {}): ReadableStream<UIMessageChunk> {
    const answer = this.init.env.answer;
    if (answer === undefined)
      throw invalidRequest(
        `chat ${this.chatId}: the chat store has no answer function; give createChatStore an \`answer\``,
      );
    const pipe = new TransformStream<UIMessageChunk, UIMessageChunk>();
    const client = this.stream(pipe.readable, options);
    void answerDurably({
      env: this.init.env,
      chatId: this.chatId,
      turnId: this.turnId,
      messages: this.messages,
      answer,
      into: pipe.writable,
    });
    return client;
  }

  /** Ends a turn whose stream never started (the model call threw before it): the chat is free again. */
  async fail(error: unknown): Promise<void> {
    if (this.started) return this.done;
    this.started = true;
    const reason = error instanceof Error ? error.message : String(error);
    await this.end([{ type: 'run.failed', data: { chat_id: this.chatId, reason } }]);
  }

  /** Appends the parts of `message` no record holds yet, in one appendMessages. */
  private async save(message: UIMessage, cutOff: boolean): Promise<void> {
    if (this.init.lease.lost) return;
    const from = firstChange(this.saved, message.parts);
    const added = message.parts.slice(from);
    const tail = cutOff ? closeCutOffParts(added) : added;
    if (!hasContent(tail)) return;
    await saveWithApprovals(this.init.env, this.chatId, message.id, toRecord(message, from, tail), tail);
    this.saved = plainJson([...this.saved.slice(0, from), ...tail]);
  }

  /**
   * Reads the answer to its end whatever the client does: each chunk goes to the log and, while it is
   * there, to the client.
   */
  private async drain(stream: ReadableStream<UIMessageChunk>, client: ClientSink): Promise<void> {
    const reader = stream.getReader();
    let failure: unknown;
    try {
      for (;;) {
        const next = await reader.read();
        if (next.done) break;
        if (!this.init.lease.lost) this.log.add(next.value);
        client.chunk(next.value);
      }
    } catch (error) {
      failure = error;
      this.ending = { type: 'run.failed', cutOff: true };
    }
    client.end(failure);
    const data = { chat_id: this.chatId, ...(failure === undefined ? {} : { reason: String(failure) }) };
    await this.end([{ type: this.ending.type, data }]);
  }

  private async end(final: NewRunEvent[]): Promise<void> {
    let error: unknown;
    try {
      if (!this.init.lease.lost) {
        await this.log.write(final);
        await setActiveStream(this.init.env, this.chatId, null, this.runId);
      }
    } catch (caught) {
      error = caught;
    }
    try {
      await this.init.lease.release();
    } catch (caught) {
      error ??= caught;
    }
    this.settle(error);
  }
}
