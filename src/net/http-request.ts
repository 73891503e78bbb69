/**
 * One HTTP/1.1 request over node:http with keep-alive connections, a time-out and an optional abort signal:
 * the status, the headers and the whole body as text. A failure says how it failed, because callers treat
 * them differently: `refused` (nothing was sent), `timeout` and `aborted` (the outcome is unknown), and
 * `network` (the connection broke; unknown too). Cheaper per call than fetch, which matters to a server
 * that calls a downstream inside its turns and to a load generator sharing the machine with its server.
 */
import http from 'node:http';

export interface HttpRequestOptions {
  readonly method: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string;
  /** No answer (headers and body) within this many ms fails with `timeout`. */
  readonly timeoutMs: number;
  readonly signal?: AbortSignal;
  /**
   * Default: one keep-alive agent shared by every call of this module, which closes a connection idle for
   * 500 ms (below the usual server keep-alive time-outs, so a request is never sent on a connection the
   * server is closing at that instant).
   */
  readonly agent?: http.Agent;
}

export interface HttpAnswer {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: string;
}

export type HttpFailureKind = 'refused' | 'timeout' | 'aborted' | 'network';

export class HttpRequestError extends Error {
  constructor(
    readonly kind: HttpFailureKind,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'HttpRequestError';
  }
}

const sharedAgent = keepAliveAgent(500);

/** A keep-alive agent whose idle connections close after `idleMs`. */
export function keepAliveAgent(idleMs: number): http.Agent {
  return new http.Agent({ keepAlive: true, maxSockets: 256, timeout: idleMs });
}

export function httpRequest(url: string, options: HttpRequestOptions): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const { signal } = options;
    if (signal?.aborted) {
      reject(new HttpRequestError('aborted', 'aborted before it was sent'));
      return;
    }
    const headers: Record<string, string> = { ...options.headers };
    if (options.body !== undefined) headers['content-length'] = String(Buffer.byteLength(options.body));
    let settled = false;
    const fail = (error: HttpRequestError) => {
      if (settled) return;
      settled = true;
      cleanup();
      req.destroy();
      reject(error);
    };
    const req = http.request(url, { method: options.method, headers, agent: options.agent ?? sharedAgent });
    const timer = setTimeout(
      () => fail(new HttpRequestError('timeout', `no answer within ${options.timeoutMs} ms`)),
      options.timeoutMs,
    );
    const onAbort = () => fail(new HttpRequestError('aborted', 'aborted by the caller'));
    signal?.addEventListener('abort', onAbort, { once: true });
    function cleanup() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    }
    req.on('error', (error: NodeJS.ErrnoException) => {
      const kind = error.code === 'ECONNREFUSED' ? 'refused' : 'network';
      fail(new HttpRequestError(kind, error.message, { cause: error }));
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', (error) => fail(new HttpRequestError('network', error.message, { cause: error })));
      res.on('aborted', () => fail(new HttpRequestError('network', 'the connection closed mid-answer')));
      res.on('end', () => {
        if (settled) return;
        settled = true;
        cleanup();
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: Buffer.concat(chunks).toString('utf8'),
        });
      });
    });
    req.end(options.body);
  });
}
