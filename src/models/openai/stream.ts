/**
 * Reading a streamed chat completion as it arrives: server-sent events from a fetch body (a web
 * ReadableStream), decoded as UTF-8 across chunk boundaries, lines ended by CRLF, LF or CR, events ended
 * by a blank line; each event's data is one JSON chunk, up to `data: [DONE]`. The chunks are put together
 * into one message (content and tool calls, as a not-streamed answer would carry them), and each piece of
 * content is handed on as soon as its chunk is read.
 *
 * What goes wrong is thrown as a `StreamError` saying which kind it is; the client turns it into the
 * error it shows (naming the endpoint, never the key). Errors thrown by the caller's own callback pass
 * through unchanged.
 */
import type { ChatChoiceMessage } from './client.js';

/**
 * `broken`: reading the body failed (the connection was lost, or the wait for data timed out);
 * `incomplete`: the body ended before the stream said it was finished (no finish_reason, no [DONE]);
 * `malformed`: an event's data is not a JSON chunk; `failed`: the endpoint sent an error in the stream.
 */
export type StreamErrorKind = 'broken' | 'incomplete' | 'malformed' | 'failed';

export class StreamError extends Error {
  readonly kind: StreamErrorKind;
  constructor(kind: StreamErrorKind, message: string, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = 'StreamError';
    this.kind = kind;
  }
}

/**
 * The data of each event of a server-sent event stream, in order (an event's `data:` lines joined by
 * newlines; comments and other fields are skipped). `onBytes` is called each time bytes arrive. An error
 * reading the body is thrown as it is; when the consumer stops early, the body is cancelled.
 */
export async function* serverSentEvents(
  body: ReadableStream<Uint8Array>,
  onBytes?: () => void,
): AsyncGenerator<string, void, undefined> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const lineEnd = /\r\n|\r|\n/g; // one per stream: exec keeps its place in lastIndex
  let finished = false;
  let buffer = '';
  let data: string[] = [];
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) buffer += decoder.decode();
      else {
        onBytes?.();
        buffer += decoder.decode(value, { stream: true });
      }
      let start = 0;
      lineEnd.lastIndex = 0;
      for (let match = lineEnd.exec(buffer); match !== null; match = lineEnd.exec(buffer)) {
        // A CR at the end of what has arrived may be the first half of a CRLF: wait for the next byte.
        if (match[0] === '\r' && match.index === buffer.length - 1 && !done) break;
        const line = buffer.slice(start, match.index);
        start = match.index + match[0].length;
        if (line === '') {
          if (data.length > 0) yield data.join('\n');
          data = [];
        } else if (line.startsWith('data:')) {
          data.push(line.slice(line.startsWith('data: ') ? 6 : 5));
        } else if (line === 'data') {
          data.push('');
        }
      }
      buffer = buffer.slice(start);
      if (done) {
        // The last event may lack its blank line (or its last line its line end): hand it on all the same.
        if (buffer.startsWith('data:')) data.push(buffer.slice(buffer.startsWith('data: ') ? 6 : 5));
        if (data.length > 0) yield data.join('\n');
        finished = true;
        return;
      }
    }
  } finally {
    if (!finished) reader.cancel().catch(() => undefined);
  }
}

interface StreamDelta {
  content?: string | null;
  tool_calls?: {
    index?: number;
    id?: string;
    type?: string;
    function?: { name?: string; arguments?: string };
  }[];
}

interface StreamChunk {
  model?: unknown;
  usage?: { prompt_tokens?: unknown; completion_tokens?: unknown } | null;
  choices?: { index?: number; delta?: StreamDelta; finish_reason?: unknown }[];
  error?: unknown;
}

/** What a stream put together: the first choice's message, and what a trace records of the answer. */
export interface StreamedAnswer {
  readonly message: ChatChoiceMessage | undefined;
  readonly model?: unknown;
  readonly usage?: StreamChunk['usage'];
  readonly finish_reason?: unknown;
}

/** Puts the chunks of a stream together: the first choice's content and tool calls, usage, finish reason. */
export class ChunkAssembler {
  private content: string | null = null;
  private readonly calls: { id?: string; type?: string; name: string; arguments: string }[] = [];
  private seen = false;
  private model: unknown;
  private usage: StreamChunk['usage'];
  private finishReason: unknown;

  /** Adds one chunk; returns the piece of content it carries ('' when none). */
  add(chunk: StreamChunk): string {
    if (chunk.model !== undefined) this.model = chunk.model;
    if (typeof chunk.usage === 'object' && chunk.usage !== null) this.usage = chunk.usage;
    const choice = chunk.choices?.find((c) => (c.index ?? 0) === 0);
    if (choice === undefined) return '';
    if (choice.finish_reason !== undefined && choice.finish_reason !== null)
      this.finishReason = choice.finish_reason;
    const delta = choice.delta;
    if (delta === undefined || delta === null) return '';
    this.seen = true;
    for (const part of delta.tool_calls ?? []) {
      const index = part.index ?? this.calls.length;
      const call = this.calls[index] ?? { name: '', arguments: '' };
      this.calls[index] = call;
      if (part.id !== undefined) call.id = part.id;
      if (part.type !== undefined) call.type = part.type;
      call.name += part.function?.name ?? '';
      call.arguments += part.function?.arguments ?? '';
    }
    if (typeof delta.content !== 'string') return '';
    this.content = (this.content ?? '') + delta.content;
    return delta.content;
  }

  /** True once a chunk said why the first choice finished. */
  get finished(): boolean {
    return this.finishReason !== undefined;
  }

  /** The message put together, or undefined when no chunk carried a delta of the first choice. */
  message(): ChatChoiceMessage | undefined {
    if (!this.seen) return undefined;
    const toolCalls = this.calls
      .filter((call) => call !== undefined)
      .map(({ id, type, name, arguments: args }) => ({
        ...(id === undefined ? {} : { id }),
        ...(type === undefined ? {} : { type }),
        function: { name, arguments: args },
      }));
    return { content: this.content, ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}) };
  }

  answer(): StreamedAnswer {
    return {
      message: this.message(),
      model: this.model,
      usage: this.usage,
      finish_reason: this.finishReason,
    };
  }
}

/** The text of an error an endpoint sent in the stream. */
function streamedErrorText(error: unknown): string {
  if (typeof error === 'string') return error;
  const message = (error as { message?: unknown } | null)?.message;
  return typeof message === 'string' ? message : JSON.stringify(error);
}

/**
 * Reads a Chat Completions stream as it arrives, calling `onContent` with each piece of the first choice's
 * content in order, and returns what the stream put together. The stream is finished by `data: [DONE]`
 * or, when the body ends without it, by a finish reason; a body that ends before either is `incomplete`.
 */
export async function readChatStream(
  body: ReadableStream<Uint8Array>,
  onContent: (piece: string) => void,
  onBytes?: () => void,
): Promise<StreamedAnswer> {
  const assembler = new ChunkAssembler();
  const events = serverSentEvents(body, onBytes);
  let done = false;
  try {
    for (;;) {
      let next: IteratorResult<string, void>;
      try {
        next = await events.next();
      } catch (error) {
        throw new StreamError('broken', error instanceof Error ? error.message : String(error), error);
      }
      if (next.done === true) break;
      const data = next.value.trim();
      if (data === '[DONE]') {
        done = true;
        break;
      }
      let chunk: StreamChunk;
      try {
        chunk = JSON.parse(data) as StreamChunk;
      } catch (error) {
        throw new StreamError('malformed', data.slice(0, 200), error);
      }
      if (typeof chunk !== 'object' || chunk === null || Array.isArray(chunk))
        throw new StreamError('malformed', data.slice(0, 200));
      if (chunk.error !== undefined && chunk.error !== null)
        throw new StreamError('failed', streamedErrorText(chunk.error));
      const piece = assembler.add(chunk);
      if (piece !== '') onContent(piece);
    }
  } finally {
    await events.return(undefined);
  }
  if (!done && !assembler.finished)
    throw new StreamError('incomplete', 'the stream ended before it said it was finished');
  return assembler.answer();
}
