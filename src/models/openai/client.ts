/**
 * A minimal client of the OpenAI Chat Completions protocol (any compatible endpoint): one POST to
 * `{baseURL}/chat/completions`, a time-out per attempt, limited retries with exponential backoff on
 * network errors, 408, 409, 429 and 5xx (honouring Retry-After), and errors that say what went wrong.
 */
import { AgentStateError } from '../../core/errors.js';
import type { JsonObject, JsonValue } from '../../core/json.js';

export interface OpenAIConfig {
  /** For example https://api.openai.com/v1 or http://127.0.0.1:8000/v1. */
  readonly baseURL: string;
  readonly apiKey?: string;
  readonly model: string;
  /** Per attempt. Default 30000. */
  readonly timeoutMs?: number;
  /** Retries after the first attempt. Default 2. */
  readonly maxRetries?: number;
  /** Delay before the first retry, doubled each time. Default 500. */
  readonly backoffMs?: number;
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

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function retryAfterMs(header: string | null): number | null {
  if (header === null) return null;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const at = Date.parse(header);
  return Number.isNaN(at) ? null : Math.max(0, at - Date.now());
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

/** Sends one chat completion request and returns the first choice's message. */
export async function chatCompletion(config: OpenAIConfig, body: JsonObject): Promise<ChatChoiceMessage> {
  const url = `${config.baseURL.replace(/\/+$/, '')}/chat/completions`;
  const timeoutMs = config.timeoutMs ?? 30_000;
  const maxRetries = config.maxRetries ?? 2;
  const backoffMs = config.backoffMs ?? 500;
  const payload = JSON.stringify({ model: config.model, ...body });
  let lastError: AgentStateError | null = null;
  let retryDelay: number | null = null;
  for (let attempt = 0; attempt <= maxRetries; attempt++) {
    if (attempt > 0) await sleep(retryDelay ?? backoffMs * 2 ** (attempt - 1));
    retryDelay = null;
    let response: Response;
    try {
      response = await fetch(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...(config.apiKey === undefined ? {} : { authorization: `Bearer ${config.apiKey}` }),
        },
        body: payload,
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (error) {
      const timedOut =
        error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError');
      lastError = modelError(
        timedOut
          ? `${url}: no answer within ${timeoutMs} ms (attempt ${attempt + 1} of ${maxRetries + 1})`
          : `${url}: ${error instanceof Error ? error.message : String(error)} (attempt ${attempt + 1} of ${maxRetries + 1})`,
        { url, attempt: attempt + 1 },
        error,
      );
      continue;
    }
    const text = await response.text();
    if (!response.ok) {
      lastError = modelError(`${url} answered ${response.status}: ${errorText(text)}`, {
        url,
        status: response.status,
        attempt: attempt + 1,
      });
      if (!RETRYABLE.has(response.status)) throw lastError;
      retryDelay = retryAfterMs(response.headers.get('retry-after'));
      continue;
    }
    let parsed: { choices?: { message?: ChatChoiceMessage }[] };
    try {
      parsed = JSON.parse(text) as typeof parsed;
    } catch (error) {
      throw modelError(`${url} answered with a body that is not JSON: ${text.slice(0, 200)}`, { url }, error);
    }
    const message = parsed.choices?.[0]?.message;
    if (message === undefined) throw modelError(`${url} answered without choices[0].message`, { url });
    return message;
  }
  throw lastError ?? modelError(`${url}: no attempt was made`);
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
