/**
 * The harness's requests, through agentstate/client over node:http with keep-alive connections: each one
 * becomes an exchange (status, the whole body text, the time), which the leak check reads at the end.
 *
 * The client here retries nothing and adds no `Idempotency-Key`: the harness measures what the server
 * answers to each request as sent, and its figures stay comparable with runs made before it used the client.
 * The simulated users' routes are typed calls (`send`); the cross-user probes send the paths their plan
 * names (`request`), through the same client.
 */
import type { Client } from 'openapi-fetch';
import { type AgentStateClient, createClient, type paths } from '../../client/index.js';
import { httpRequest, keepAliveAgent } from '../../net/http-request.js';

export interface Exchange {
  readonly method: string;
  readonly path: string;
  /** The request body as sent ('' for none): a value the client sent itself is no leak when echoed. */
  readonly sent: string;
  /** 0 when the request failed before any answer (connection error, time-out). */
  readonly status: number;
  readonly body: string;
  readonly ms: number;
  readonly error?: string;
}

/**
 * An exchange as the harness keeps it until the leak check at the end: the body's bytes live outside the
 * JavaScript heap, so thousands of kept answers do not make the load generator's garbage collector pause
 * (and its timings of the requests in flight with it) longer as the run goes on.
 */
class KeptExchange implements Exchange {
  private readonly bytes: Buffer;

  constructor(
    readonly method: string,
    readonly path: string,
    readonly sent: string,
    readonly status: number,
    body: string,
    readonly ms: number,
  ) {
    this.bytes = Buffer.from(body, 'utf8');
  }

  get body(): string {
    return this.bytes.toString('utf8');
  }
}

const TIMEOUT_MS = 60_000;
/** The simulated users' connections stay open across think times (agentstate keeps them 72 s). */
const agent = keepAliveAgent(30_000);

interface Sent {
  readonly method: string;
  readonly path: string;
  readonly sent: string;
  readonly text: string;
  readonly ms: number;
}

/** What each answer's request sent and got, as text, and its time on the wire. */
const wire = new WeakMap<Response, Sent>();

/** The client's fetch: one request over node:http, timed from sending to the last byte of the answer. */
async function keepAliveFetch(request: Request): Promise<Response> {
  const sent = request.body === null ? '' : await request.text();
  const url = new URL(request.url);
  const started = performance.now();
  const answer = await httpRequest(request.url, {
    method: request.method,
    headers: Object.fromEntries(request.headers),
    ...(request.body === null ? {} : { body: sent }),
    timeoutMs: TIMEOUT_MS,
    agent,
  });
  const ms = performance.now() - started;
  const headers = new Headers();
  for (const [name, value] of Object.entries(answer.headers)) {
    for (const one of Array.isArray(value) ? value : value === undefined ? [] : [value])
      headers.append(name, one);
  }
  const empty = answer.status === 204 || answer.status === 304;
  const response = new Response(empty ? null : answer.body, { status: answer.status, headers });
  wire.set(response, {
    method: request.method,
    path: `${url.pathname}${url.search}`,
    sent,
    text: answer.body,
    ms,
  });
  return response;
}

const clients = new Map<string, AgentStateClient>();

function clientOf(baseUrl: string): AgentStateClient {
  let client = clients.get(baseUrl);
  if (client === undefined) {
    client = createClient({ baseUrl, fetch: keepAliveFetch, retries: false, idempotencyKeys: false });
    clients.set(baseUrl, client);
  }
  return client;
}

/** The headers that carry `token`. */
export function bearer(token: string): { headers: Record<string, string> } {
  return { headers: { authorization: `Bearer ${token}` } };
}

function failed(method: string, path: string, sent: string, started: number, error: unknown): Exchange {
  const message = error instanceof Error ? error.message : String(error);
  return { method, path, sent, status: 0, body: '', ms: performance.now() - started, error: message };
}

function exchangeOf(response: Response): Exchange {
  const at = wire.get(response) as Sent;
  return new KeptExchange(at.method, at.path, at.sent, response.status, at.text, at.ms);
}

/**
 * One typed call of the client (`raw.GET(...)`), as an exchange and, for a 2xx answer, its parsed body.
 * `label` (`POST /v1/sessions`) and `sent` name the request when it got no answer.
 */
export async function send<R extends { data?: unknown; response: Response }>(
  baseUrl: string,
  label: string,
  sent: unknown,
  call: (raw: Client<paths>) => Promise<R>,
): Promise<{ exchange: Exchange; data: R['data'] | undefined }> {
  const started = performance.now();
  try {
    const outcome = await call(clientOf(baseUrl).raw);
    return { exchange: exchangeOf(outcome.response), data: outcome.response.ok ? outcome.data : undefined };
  } catch (error) {
    const [method = 'GET', path = ''] = label.split(' ');
    const body = sent === undefined ? '' : JSON.stringify(sent);
    return { exchange: failed(method, path, body, started, error), data: undefined };
  }
}

/** A GET of a path as given (a probe's), with `token`, through the same client. */
export async function request(
  baseUrl: string,
  method: string,
  path: string,
  init: { readonly token: string },
): Promise<Exchange> {
  const started = performance.now();
  try {
    const client = clientOf(baseUrl);
    const response = await client.transport.fetch(
      new Request(`${client.transport.baseUrl}${path}`, { method, ...bearer(init.token) }),
    );
    return exchangeOf(response);
  } catch (error) {
    return failed(method, path, '', started, error);
  }
}

/** The parsed JSON body, or null when it is not JSON. */
export function jsonOf<T>(exchange: Exchange): T | null {
  try {
    return JSON.parse(exchange.body) as T;
  } catch {
    return null;
  }
}
