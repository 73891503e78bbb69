/**
 * `agentstate/client`: a typed client of agentstate's HTTP API, for Node 20 and browsers. Its types are
 * generated from the server's OpenAPI document (`npm run client:generate` writes src/client/openapi.ts);
 * openapi-fetch sends the requests.
 *
 * ```ts
 * const client = createClient({ baseUrl: 'http://127.0.0.1:8787', token: process.env.AGENTSTATE_TOKEN });
 * const session = await client.sessions.create({ agent: 'deploy_pipeline' });
 * const turn = await client.sessions.turn(session.id, 'deploy web to staging');
 * ```
 *
 * - Every method answers the body of a 2xx answer, or throws `AgentStateHttpError` with the server's `code`.
 * - Every POST carries an `Idempotency-Key`: a fresh one per call, the same across that call's retries.
 * - 429, 503 and failed connections are retried (3 times by default), after `Retry-After` when given.
 * - `raw` is the openapi-fetch client underneath (`raw.GET('/v1/sessions/{id}', ...)`), which answers
 *   `{ data, error, response }` and throws nothing for an error status.
 *
 * A run's events as they happen (Server-Sent Events, resumed with `Last-Event-ID` when the connection drops)
 * are async iterators built on `transport` (run-events.ts):
 *
 * ```ts
 * for await (const event of client.streamTurn(session.id, 'deploy web to staging')) {
 *   if (event.type === 'message.delta') process.stdout.write(String(event.data.text));
 * }
 * ```
 */
import createFetchClient, { type Client, type Middleware } from 'openapi-fetch';
import { type Api, createApi, createRunner } from './api.js';
import type { paths } from './openapi.js';
import { type FetchLike, type RetryOptions, retryingFetch, retryPolicy } from './retry.js';
import { createRunStreams, type RunStreams } from './run-events.js';

export type { Api, CallOptions } from './api.js';
export {
  AgentStateHttpError,
  type AgentStateHttpErrorInit,
  type ClientErrorCode,
  isAgentStateHttpError,
  retryAfterMsOf,
  SERVER_ERROR_STATUS,
  type ServerErrorCode,
} from './errors.js';
export type { FetchLike, RetryOptions } from './retry.js';
export {
  FINAL_RUN_EVENT_TYPES,
  type FollowRunOptions,
  type FollowSessionOptions,
  followRun,
  followSession,
  isFinalRunEvent,
  type RunEvent,
  type RunEventType,
  type RunStreams,
  type StreamOptions,
  type StreamTransport,
  type StreamTurnOptions,
  sessionCursor,
  streamTurn,
} from './run-events.js';
export { type SseMessage, SseParser, sseMessages } from './sse.js';
export type * from './types.js';

export interface ClientOptions {
  /** The server's root, e.g. `http://127.0.0.1:8787` (the API's paths start with `/v1`). */
  readonly baseUrl: string;
  /**
   * The bearer token: a tenant API key or a user token (`POST /v1/tokens`). A function is asked before every
   * request (a token that changes); none, empty or null sends no `Authorization` (a keyless local server).
   */
  readonly token?: string | null | (() => string | null | undefined);
  /** The fetch to send with (default `globalThis.fetch`), e.g. one over a keep-alive agent. */
  readonly fetch?: FetchLike;
  /** Retries of 429, 503 and failed connections: a count, options, or false for none. Default 3. */
  readonly retries?: number | RetryOptions | false;
  /**
   * `Idempotency-Key` on every POST (default true): a fresh key per call, or the key a function makes.
   * A call's `idempotencyKey` option names one itself.
   */
  readonly idempotencyKeys?: boolean | (() => string);
  /** Headers sent with every request. */
  readonly headers?: Readonly<Record<string, string>>;
}

/** What an extension (such as the event streams) sends its own requests with. */
export interface ClientTransport {
  readonly baseUrl: string;
  /** Sends `request` with the client's token and headers, and its retries. */
  readonly fetch: FetchLike;
}

export type AgentStateClient = Api &
  RunStreams & {
    /** The openapi-fetch client underneath, with the same token, keys and retries. */
    readonly raw: Client<paths>;
    readonly transport: ClientTransport;
  };

/** A random UUID; in a page served over plain HTTP (no `crypto.randomUUID`) from random bytes. */
export function randomKey(): string {
  const { crypto } = globalThis;
  if (typeof crypto.randomUUID === 'function') return crypto.randomUUID();
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[6] = ((bytes[6] ?? 0) & 0x0f) | 0x40;
  bytes[8] = ((bytes[8] ?? 0) & 0x3f) | 0x80;
  const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

function tokenOf(token: ClientOptions['token']): string | null | undefined {
  return typeof token === 'function' ? token() : token;
}

/** Adds the credential, the common headers and a POST's `Idempotency-Key` to a request not carrying them. */
function stamp(request: Request, options: ClientOptions): void {
  for (const [name, value] of Object.entries(options.headers ?? {})) {
    if (!request.headers.has(name)) request.headers.set(name, value);
  }
  const token = tokenOf(options.token);
  if (token && !request.headers.has('authorization')) request.headers.set('authorization', `Bearer ${token}`);
  const keys = options.idempotencyKeys ?? true;
  if (request.method === 'POST' && keys !== false && !request.headers.has('idempotency-key')) {
    request.headers.set('idempotency-key', typeof keys === 'function' ? keys() : randomKey());
  }
}

export function createClient(options: ClientOptions): AgentStateClient {
  const baseUrl = options.baseUrl.replace(/\/+$/, '');
  const base: FetchLike = options.fetch ?? ((request) => globalThis.fetch(request));
  const send = retryingFetch(base, retryPolicy(options.retries));
  const raw = createFetchClient<paths>({ baseUrl, fetch: send });
  const stamping: Middleware = {
    onRequest({ request }) {
      stamp(request, options);
      return request;
    },
  };
  raw.use(stamping);
  const transport: ClientTransport = {
    baseUrl,
    fetch: (request) => {
      stamp(request, options);
      return send(request);
    },
  };
  return { ...createApi(raw, createRunner(baseUrl)), ...createRunStreams(transport), raw, transport };
}
