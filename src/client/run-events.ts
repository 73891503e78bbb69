/**
 * A run's events as they happen, over Server-Sent Events, for Node 20 and browsers (fetch streaming, so the
 * client's token goes in the `Authorization` header, which `EventSource` cannot send):
 *
 * - `streamTurn(sessionId, input)` runs a turn (`POST /v1/sessions/{id}/turns`, `Accept: text/event-stream`)
 *   and yields its run's events, `run.started` first, to its final event (`run.completed`, whose data is the
 *   JSON a plain turn answers, `run.failed` or `run.cancelled`), then ends.
 * - `followRun(sessionId, runId, { after })` yields a run's events after `after` (from its first without),
 *   to its final event (`GET /v1/sessions/{id}/runs/{run_id}/events`).
 * - `followSession(sessionId, { after })` yields the events of the session's runs one after another, from
 *   the run its next turn will be, and never ends by itself (`GET /v1/sessions/{id}/events`); `after` is a
 *   `sessionCursor(event)`.
 *
 * A connection that drops (or ends) before the final event is opened again with `Last-Event-ID` through the
 * GET route, after a backoff, so every event is yielded exactly once and in order; `reconnects` attempts in
 * a row that bring no event (default 5) end the stream with an `AgentStateHttpError` of code `network`. A
 * connection silent for `idleTimeoutMs` (the server sends a keep-alive every 15 s) counts as dropped. An
 * HTTP error answer (4xx, 5xx: a session not found, another turn running) throws `AgentStateHttpError` with
 * the server's code, as the other methods do; a 429 or a 503 is first retried as theirs are. A turn whose
 * connection drops before its first event cannot be followed (its run id is not known yet): that throws a
 * `network` error, and the turn may have run (`followSession` would have seen it). Leaving the loop early
 * (`break`) or aborting `signal` closes the connection; the run goes on.
 */
import { AgentStateHttpError, errorOfResponse, networkError } from './errors.js';
import { sleep } from './retry.js';
import { SseParser, sseMessages } from './sse.js';
import type { AnswerOf } from './types.js';

/** One event of a run's log (`id` orders the run's events; pass it back as `after`). */
export type RunEvent = AnswerOf<'/v1/sessions/{id}/runs/{run_id}/events', 'get', 200>['items'][number];
export type RunEventType = RunEvent['type'];

export const FINAL_RUN_EVENT_TYPES: readonly RunEventType[] = [
  'run.completed',
  'run.failed',
  'run.cancelled',
];

/** True for the event types that end a run: `run.completed`, `run.failed`, `run.cancelled`. */
export function isFinalRunEvent(type: string): boolean {
  return (FINAL_RUN_EVENT_TYPES as readonly string[]).includes(type);
}

/** Where a session's stream stands after `event`: its `Last-Event-ID` there, `<run_id>:<event id>`. */
export function sessionCursor(event: Pick<RunEvent, 'run_id' | 'id'>): string {
  return `${event.run_id}:${event.id}`;
}

export interface StreamOptions {
  readonly signal?: AbortSignal;
  /** Attempts in a row to open a dropped stream again, that bring no event, before it fails. Default 5. */
  readonly reconnects?: number;
  /** The first wait before opening a dropped stream again; it doubles each attempt. Default 250 ms. */
  readonly reconnectDelayMs?: number;
  /** The longest wait between two attempts. Default 5000 ms. */
  readonly maxReconnectDelayMs?: number;
  /** A connection that brings nothing (not even a keep-alive) this long is dropped. Default 45 000 ms. */
  readonly idleTimeoutMs?: number;
  readonly headers?: Readonly<Record<string, string>>;
  /** Called each time a connection is answered with the event stream (the first, and each reconnection). */
  readonly onOpen?: () => void;
}

export interface StreamTurnOptions extends StreamOptions {
  /** The turn's `Idempotency-Key`; default a fresh one (kept across the POST's retries). */
  readonly idempotencyKey?: string;
}

export interface FollowRunOptions extends StreamOptions {
  /** The id of the last event already had; absent or null: from the run's first. */
  readonly after?: string | null;
}

export interface FollowSessionOptions extends StreamOptions {
  /** `sessionCursor` of the last event already had; absent or null: from the session's next run. */
  readonly after?: string | null;
}

/** What the streams send with: the client's `transport` (its base URL, token, headers and retries). */
export interface StreamTransport {
  readonly baseUrl: string;
  readonly fetch: (request: Request) => Promise<Response>;
}

export interface RunStreams {
  streamTurn(sessionId: string, input: string, options?: StreamTurnOptions): AsyncGenerator<RunEvent>;
  followRun(sessionId: string, runId: string, options?: FollowRunOptions): AsyncGenerator<RunEvent>;
  followSession(sessionId: string, options?: FollowSessionOptions): AsyncGenerator<RunEvent>;
}

const TURN = 'POST /v1/sessions/{id}/turns';
const RUN_EVENTS = 'GET /v1/sessions/{id}/runs/{run_id}/events';
const SESSION_EVENTS = 'GET /v1/sessions/{id}/events';

interface Policy {
  readonly reconnects: number;
  readonly baseMs: number;
  readonly maxMs: number;
  readonly idleMs: number;
}

function policyOf(options: StreamOptions): Policy {
  return {
    reconnects: Math.max(0, Math.floor(options.reconnects ?? 5)),
    baseMs: options.reconnectDelayMs ?? 250,
    maxMs: options.maxReconnectDelayMs ?? 5000,
    idleMs: options.idleTimeoutMs ?? 45_000,
  };
}

function backoffMs(policy: Policy, attempt: number): number {
  const ceiling = Math.min(policy.maxMs, policy.baseMs * 2 ** (attempt - 1));
  return Math.round(ceiling / 2 + (Math.random() * ceiling) / 2);
}

const path = (...parts: string[]) => parts.map(encodeURIComponent).join('/');

/** One connection: its request's own abort (the caller's signal, or silence), and a watchdog for silence. */
class Connection {
  readonly controller = new AbortController();
  private timer: ReturnType<typeof setTimeout> | null = null;
  private readonly onAbort = () => this.controller.abort(this.signal?.reason);

  constructor(
    private readonly signal: AbortSignal | undefined,
    private readonly idleMs: number,
  ) {
    if (signal?.aborted) this.controller.abort(signal.reason);
    else signal?.addEventListener('abort', this.onAbort, { once: true });
    this.alive();
  }

  /** Something arrived: the silence starts again. */
  alive(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = setTimeout(
      () => this.controller.abort(new Error(`the stream was silent for ${this.idleMs} ms`)),
      this.idleMs,
    );
    // In Node, a watchdog alone does not keep the process alive (the socket does while it is open).
    (this.timer as { unref?: () => void }).unref?.();
  }

  close(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.signal?.removeEventListener('abort', this.onAbort);
    this.controller.abort();
  }
}

/** Sends `request`; an answer that is not a 2xx event stream throws `AgentStateHttpError`. */
async function open(transport: StreamTransport, request: Request, label: string): Promise<Response> {
  let response: Response;
  try {
    response = await transport.fetch(request);
  } catch (error) {
    if (request.signal.aborted) throw error;
    throw networkError(error, label, transport.baseUrl);
  }
  const type = response.headers.get('content-type') ?? '';
  if (response.ok && type.includes('text/event-stream') && response.body !== null) return response;
  const text = await response.text().catch(() => '');
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: the text is the error's message
  }
  if (response.ok) {
    throw new AgentStateHttpError({
      code: 'unexpected_response',
      status: response.status,
      message: `${label} answered ${response.status} ${type || 'without a content type'}, not an event stream`,
      request: label,
    });
  }
  throw errorOfResponse(response, body, label);
}

interface Read {
  readonly event: RunEvent;
  /** The message's `id:` (the run's event id; on a session's stream, its cursor). */
  readonly id: string | null;
}

/** The events of one open response, until it ends or breaks (which throws). */
async function* eventsOf(response: Response, connection: Connection): AsyncGenerator<Read> {
  const parser = new SseParser();
  const body = response.body as ReadableStream<Uint8Array>;
  // Every chunk (a keep-alive too) counts as life.
  const watched = body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, out) {
        connection.alive();
        out.enqueue(chunk);
      },
    }),
  );
  for await (const message of sseMessages(watched, parser)) {
    let event: RunEvent;
    try {
      event = JSON.parse(message.data) as RunEvent;
    } catch (error) {
      throw new AgentStateHttpError({
        code: 'unexpected_response',
        status: response.status,
        message: `an event of the stream is not JSON: ${message.data.slice(0, 200)}`,
        cause: error,
      });
    }
    yield { event, id: message.id };
  }
}

interface Resume {
  readonly label: string;
  /** The GET request that takes the stream up again after `cursor` (null: from the start). */
  readonly request: (cursor: string | null, signal: AbortSignal) => Request;
  /** True when the stream is over after this event (a run's final event); a session's never is. */
  readonly endsAt: (event: RunEvent) => boolean;
}

/**
 * Reads `first` (when given), then opens the stream again after the last event read each time it drops or
 * ends early, until `endsAt` says it is over. `cursor` is where the stream stands.
 */
async function* resuming(
  transport: StreamTransport,
  options: StreamOptions,
  resume: Resume,
  cursor: string | null,
): AsyncGenerator<RunEvent> {
  const policy = policyOf(options);
  let failures = 0;
  let last = cursor;
  for (;;) {
    const connection = new Connection(options.signal, policy.idleMs);
    let cause: unknown = null;
    let progressed = false;
    const opened = Date.now();
    try {
      const response = await open(
        transport,
        resume.request(last, connection.controller.signal),
        resume.label,
      );
      options.onOpen?.();
      for await (const read of eventsOf(response, connection)) {
        last = read.id ?? read.event.id;
        progressed = true;
        yield read.event;
        if (resume.endsAt(read.event)) return;
      }
    } catch (error) {
      if (options.signal?.aborted) throw error;
      // An answer the server gave (an error status, a body that is no stream) is final.
      if (error instanceof AgentStateHttpError && error.status !== 0) throw error;
      cause = error;
    } finally {
      connection.close();
    }
    // A connection that brought events, or stayed open a while (keep-alives), was not a failure.
    if (progressed || Date.now() - opened > policy.idleMs) failures = 0;
    failures++;
    if (failures > policy.reconnects) {
      throw networkError(
        cause ?? new Error('the stream kept ending before its final event'),
        resume.label,
        transport.baseUrl,
      );
    }
    await sleep(backoffMs(policy, failures), options.signal);
  }
}

function headersOf(options: StreamOptions, extra: Record<string, string>): Headers {
  const headers = new Headers(options.headers);
  for (const [name, value] of Object.entries(extra)) headers.set(name, value);
  headers.set('accept', 'text/event-stream');
  return headers;
}

/** `GET .../runs/{run_id}/events` after `cursor`, as an event stream. */
function runResume(
  transport: StreamTransport,
  sessionId: string,
  runId: string,
  options: StreamOptions,
): Resume {
  const url = `${transport.baseUrl}/v1/sessions/${path(sessionId)}/runs/${path(runId)}/events`;
  return {
    label: RUN_EVENTS,
    request: (cursor, signal) =>
      new Request(url, {
        headers: headersOf(options, cursor === null ? {} : { 'last-event-id': cursor }),
        signal,
      }),
    endsAt: (event) => isFinalRunEvent(event.type),
  };
}

export async function* followRun(
  transport: StreamTransport,
  sessionId: string,
  runId: string,
  options: FollowRunOptions = {},
): AsyncGenerator<RunEvent> {
  yield* resuming(transport, options, runResume(transport, sessionId, runId, options), options.after ?? null);
}

export async function* followSession(
  transport: StreamTransport,
  sessionId: string,
  options: FollowSessionOptions = {},
): AsyncGenerator<RunEvent> {
  const url = `${transport.baseUrl}/v1/sessions/${path(sessionId)}/events`;
  const resume: Resume = {
    label: SESSION_EVENTS,
    request: (cursor, signal) =>
      new Request(url, {
        headers: headersOf(options, cursor === null ? {} : { 'last-event-id': cursor }),
        signal,
      }),
    endsAt: () => false,
  };
  yield* resuming(transport, options, resume, options.after ?? null);
}

export async function* streamTurn(
  transport: StreamTransport,
  sessionId: string,
  input: string,
  options: StreamTurnOptions = {},
): AsyncGenerator<RunEvent> {
  const connection = new Connection(options.signal, policyOf(options).idleMs);
  let run: { readonly id: string; last: string } | null = null;
  let cause: unknown = null;
  try {
    const request = new Request(`${transport.baseUrl}/v1/sessions/${path(sessionId)}/turns`, {
      method: 'POST',
      headers: headersOf(options, {
        'content-type': 'application/json',
        ...(options.idempotencyKey === undefined ? {} : { 'idempotency-key': options.idempotencyKey }),
      }),
      body: JSON.stringify({ input }),
      signal: connection.controller.signal,
    });
    const response = await open(transport, request, TURN);
    options.onOpen?.();
    for await (const { event } of eventsOf(response, connection)) {
      run = { id: event.run_id, last: event.id };
      yield event;
      if (isFinalRunEvent(event.type)) return;
    }
  } catch (error) {
    if (options.signal?.aborted) throw error;
    if (error instanceof AgentStateHttpError && error.status !== 0) throw error;
    // Nothing read yet: no run to follow (a POST that never got an answer was retried beneath already).
    if (run === null)
      throw error instanceof AgentStateHttpError ? error : networkError(error, TURN, transport.baseUrl);
    cause = error;
  } finally {
    connection.close();
  }
  if (run === null) {
    throw networkError(
      cause ?? new Error('the stream ended before the run started'),
      TURN,
      transport.baseUrl,
    );
  }
  yield* resuming(transport, options, runResume(transport, sessionId, run.id, options), run.last);
}

/** The streams of a client that sends with `transport` (the client's token, headers and retries). */
export function createRunStreams(transport: StreamTransport): RunStreams {
  return {
    streamTurn: (sessionId, input, options) => streamTurn(transport, sessionId, input, options),
    followRun: (sessionId, runId, options) => followRun(transport, sessionId, runId, options),
    followSession: (sessionId, options) => followSession(transport, sessionId, options),
  };
}
