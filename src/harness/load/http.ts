/** One timed HTTP request (node:http, keep-alive): status, the whole body text, the time. */
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

export interface RequestInit {
  readonly token: string;
  readonly body?: unknown;
  readonly timeoutMs?: number;
}

const DEFAULT_TIMEOUT_MS = 60_000;
/** The simulated users' connections stay open across think times (agentstate keeps them 72 s). */
const agent = keepAliveAgent(30_000);

export async function request(
  baseUrl: string,
  method: string,
  path: string,
  init: RequestInit,
): Promise<Exchange> {
  const headers: Record<string, string> = { authorization: `Bearer ${init.token}` };
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  const sent = init.body === undefined ? '' : JSON.stringify(init.body);
  const started = performance.now();
  try {
    const answer = await httpRequest(`${baseUrl}${path}`, {
      method,
      headers,
      ...(init.body === undefined ? {} : { body: sent }),
      timeoutMs: init.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      agent,
    });
    const ms = performance.now() - started;
    return new KeptExchange(method, path, sent, answer.status, answer.body, ms);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return { method, path, sent, status: 0, body: '', ms: performance.now() - started, error: message };
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
