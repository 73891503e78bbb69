/**
 * A minimal client of the OpenAI Chat Completions protocol (any compatible endpoint): one POST to
 * `{baseURL}/chat/completions`, a time-out per attempt, limited retries with exponential backoff on
 * network errors, 408, 409, 429 and 5xx (honouring Retry-After), and errors that say what went wrong.
 * Answers may be streamed (server-sent events, `stream: true`). Given `onDelta`, the stream is read as it
 * arrives (stream.ts) and each piece of content handed on at once; otherwise it is read to its end and
 * put together into one message. Errors name the endpoint, never the API key: the URL is shown without
 * its user information, and the key is cut out of any text the endpoint answered.
 */
import { AgentStateError } from '../../core/errors.js';
import type { JsonObject, JsonValue } from '../../core/json.js';
import { recordModelResponse } from '../../observability/tracing.js';
import { ChunkAssembler, readChatStream, StreamError } from './stream.js';

export interface OpenAIConfig {
  /** For example https://api.openai.com/v1 or http://127.0.0.1:8000/v1. */
  readonly baseURL: string;
  readonly apiKey?: string;
  readonly model: string;
  /**
   * Per attempt. Default 30000. A reply read as it streams (`onDelta`) has this long for the answer to
   * begin, and then for each next piece.
   */
  readonly timeoutMs?: number;
  /** Retries after the first attempt. Default 2. */
  readonly maxRetries?: number;
  /** Delay before the first retry, doubled each time. Default 500. */
  readonly backoffMs?: number;
  /** Ask for a streamed answer (server-sent events). Default false. */
  readonly stream?: boolean;
}

export interface ChatMessage {
  readonly role: 'system' | 'user' | 'assistant';
  readonly content: string;
}

export interface ChatToolCall {
  readonly id?: string;
  readonly type?: string;
  readonly function: { readonly name: string; readonly arguments: string };
}

export interface ChatChoiceMessage {
  readonly content?: string | null;
  readonly tool_calls?: readonly ChatToolCall[];
}

const RETRYABLE = new Set([408, 409, 429, 500, 502, 503, 504]);

function modelError(
  message: string,
  details: Record<string, unknown> = {},
  cause?: unknown,
): AgentStateError {
  return new AgentStateError('upstream_unavailable', `[openai] ${message}`, {
    details: { source: 'model', ...details },
    cause,
  });
}

/** The endpoint as errors show it: without user information (a key may hide there). */
export function endpointOf(baseURL: string): string {
  try {
    const url = new URL(baseURL);
    url.username = '';
    url.password = '';
    return url.href.replace(/\/+$/, '');
  } catch {
    return baseURL.replace(/\/\/[^/@]*@/, '//').replace(/\/+$/, '');
  }
}

/** The text with every occurrence of the key replaced. */
function withoutKey(text: string, apiKey: string | undefined): string {
  return apiKey === undefined || apiKey.length < 4 ? text : text.split(apiKey).join('[redacted]');
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function retryAfterMs(header: string | null): number | null {
  if (header === null) return null;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const at = Date.parse(header);
  return Number.isNaN(at) ? null : Math.max(0, at - Date.now());
}

/** A network error's message with its cause (fetch says only "fetch failed"; the cause says why). */
function networkText(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = (error as Error & { cause?: unknown }).cause;
  const why =
    cause instanceof Error
      ? ((cause as Error & { code?: string }).code ?? cause.message)
      : cause === undefined
        ? ''
        : String(cause);
  return why === '' || error.message.includes(why) ? error.message : `${error.message} (${why})`;
}

function errorText(body: string): string {
  try {
    const parsed = JSON.parse(body) as { error?: { message?: string } | string };
    if (typeof parsed.error === 'string') return parsed.error;
    if (typeof parsed.error?.message === 'string') return parsed.error.message;
  } catch {
    // not JSON: show it as it is
  }
  return body.slice(0, 300);
}

/** The message a stream of chunks (`data: {...}` lines up to `data: [DONE]`) puts together. */
export function messageFromStream(text: string): ChatChoiceMessage | undefined {
  const assembler = new ChunkAssembler();
  for (const line of text.split(/\r?\n/)) {
    if (!line.startsWith('data:')) continue;
    const data = line.slice(5).trim();
    if (data === '[DONE]') break;
    assembler.add(JSON.parse(data));
  }
  return assembler.message();
}

/** What a (not streamed) chat completion answers: the first choice, and what a trace records of it. */
interface ChatAnswer {
  readonly model?: unknown;
  readonly usage?: { readonly prompt_tokens?: unknown; readonly completion_tokens?: unknown } | null;
  readonly choices?: { readonly message?: ChatChoiceMessage; readonly finish_reason?: unknown }[];
}

export interface ChatCompletionOptions {
  /**
   * Asks for a streamed answer (`stream: true`, with usage in its last chunk) and calls this with each
   * piece of the first choice's content as it arrives, in order. An endpoint that answers plain JSON all
   * the same has it called once with the whole content. Pieces handed on are never taken back: once one
   * was, a broken stream is not retried.
   */
  readonly onDelta?: (text: string) => void;
}

/** Sends one chat completion request and returns the first choice's message. */
export async function chatCompletion(
  config: OpenAIConfig,
  body: JsonObject,
  options: ChatCompletionOptions = {},
): Promise<ChatChoiceMessage> {
  const target = `${config.baseURL.replace(/\/+$/, '')}/chat/completions`;
  const url = `${endpointOf(config.baseURL)}/chat/completions`;
  const hide = (text: string) => withoutKey(text, config.apiKey);
  const timeoutMs = config.timeoutMs ?? 30_000;
  const maxRetries = config.maxRetries ?? 2;
  const backoffMs = config.backoffMs ?? 500;
  const { onDelta } = options;
  const askedStream = onDelta !== undefined || config.stream === true;
  const payload = JSON.stringify({
    model: config.model,
    ...body,
    ...(askedStream ? { stream: true } : {}),
    ...(onDelta !== undefined ? { stream_options: { include_usage: true } } : {}),
  });
  let lastError: AgentStateError | null = null;
  let retryDelay: number | null = null;
  for (let attempt = 0; attempt <= maxRetries; attempt++) {
    if (attempt > 0) await sleep(retryDelay ?? backoffMs * 2 ** (attempt - 1));
    retryDelay = null;
    const of = `(attempt ${attempt + 1} of ${maxRetries + 1})`;
    const controller = new AbortController();
    const timer = setTimeout(
      () => controller.abort(new DOMException(`no answer within ${timeoutMs} ms`, 'TimeoutError')),
      timeoutMs,
    );
    try {
      let response: Response;
      try {
        response = await fetch(target, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            ...(config.apiKey === undefined ? {} : { authorization: `Bearer ${config.apiKey}` }),
          },
          body: payload,
          signal: controller.signal,
        });
      } catch (error) {
        lastError = modelError(
          isTimeout(error)
            ? `${url}: no answer within ${timeoutMs} ms ${of}`
            : `${url}: ${hide(networkText(error))} ${of}`,
          { url, attempt: attempt + 1 },
          error,
        );
        continue;
      }
      const eventStream = (response.headers.get('content-type') ?? '').includes('text/event-stream');
      if (onDelta !== undefined && response.ok && eventStream && response.body !== null) {
        let emitted = false;
        let answer: Awaited<ReturnType<typeof readChatStream>>;
        try {
          answer = await readChatStream(
            response.body,
            (piece) => {
              emitted = true;
              onDelta(piece);
            },
            () => timer.refresh(),
          );
        } catch (error) {
          if (!(error instanceof StreamError)) throw error;
          if (error.kind === 'malformed') {
            throw modelError(
              `${url} answered with a chunk that is not JSON: ${hide(error.message)}`,
              { url },
              error,
            );
          }
          lastError = modelError(
            error.kind === 'failed'
              ? `${url} answered an error in the stream: ${hide(error.message)} ${of}`
              : error.kind === 'incomplete'
                ? `${url}: the stream ended before it was finished ${of}`
                : isTimeout(error.cause)
                  ? `${url}: the stream stopped: no data within ${timeoutMs} ms ${of}`
                  : `${url}: the stream broke off: ${hide(networkText(error.cause))} ${of}`,
            { url, attempt: attempt + 1 },
            error,
          );
          // What was handed on cannot be taken back: only a stream that gave nothing yet is tried again.
          if (emitted) throw lastError;
          continue;
        }
        recordModelResponse({
          request_model: config.model,
          model: answer.model,
          usage: answer.usage,
          finish_reason: answer.finish_reason,
        });
        if (answer.message === undefined)
          throw modelError(`${url} answered a stream without choices[0].delta`, { url });
        return answer.message;
      }
      let text: string;
      try {
        text = await response.text();
      } catch (error) {
        lastError = modelError(
          `${url}: the answer broke off: ${hide(networkText(error))} ${of}`,
          { url, attempt: attempt + 1 },
          error,
        );
        continue;
      }
      if (!response.ok) {
        lastError = modelError(`${url} answered ${response.status}: ${hide(errorText(text))}`, {
          url,
          status: response.status,
          attempt: attempt + 1,
        });
        if (!RETRYABLE.has(response.status)) throw lastError;
        retryDelay = retryAfterMs(response.headers.get('retry-after'));
        continue;
      }
      // An endpoint may ignore `stream: true` and answer plain JSON, or stream under another content type.
      const streamed = eventStream || (askedStream && text.trimStart().startsWith('data:'));
      let message: ChatChoiceMessage | undefined;
      try {
        if (streamed) {
          message = messageFromStream(text);
          recordModelResponse({ request_model: config.model });
        } else {
          const answer = JSON.parse(text) as ChatAnswer;
          message = answer.choices?.[0]?.message;
          recordModelResponse({
            request_model: config.model,
            model: answer.model,
            usage: answer.usage,
            finish_reason: answer.choices?.[0]?.finish_reason,
          });
        }
      } catch (error) {
        throw modelError(
          `${url} answered with a body that is not ${streamed ? 'a stream of JSON chunks' : 'JSON'}: ${hide(text.slice(0, 200))}`,
          { url },
          error,
        );
      }
      if (message === undefined) throw modelError(`${url} answered without choices[0].message`, { url });
      if (onDelta !== undefined && typeof message.content === 'string' && message.content !== '')
        onDelta(message.content);
      return message;
    } finally {
      clearTimeout(timer);
    }
  }
  throw lastError ?? modelError(`${url}: no attempt was made`);
}

function isTimeout(error: unknown): boolean {
  return error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError');
}

/** The arguments of the forced function call (or JSON content when the endpoint answered in text). */
export function functionArguments(message: ChatChoiceMessage, name: string): JsonValue {
  const call = message.tool_calls?.find((c) => c.function.name === name) ?? message.tool_calls?.[0];
  const raw = call?.function.arguments ?? message.content ?? '';
  const text = raw.trim().replace(/^```(?:json)?\s*|\s*```$/g, '');
  try {
    return JSON.parse(text) as JsonValue;
  } catch (error) {
    throw modelError(`the answer to ${name} is not JSON: ${text.slice(0, 200)}`, { function: name }, error);
  }
}
