/**
 * A body over the size limit: the client reads the 413 and its JSON error, not a reset connection, whether
 * the size is known up front (Content-Length) or found while a chunked body streams; a client that keeps
 * sending far past the limit is cut off; a body under the limit still works. A real server on loopback,
 * with Node's fetch (undici) and raw sockets.
 */
import { type AddressInfo, connect, type Socket } from 'node:net';
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withBodyLimit } from '../../src/http/body-limit.js';
import { errorHandler } from '../../src/http/errors.js';
import { call, type ErrorReply, startTestServer, type TestServer } from './harness.js';

const LIMIT = 64 * 1024;

let server: TestServer;
let port: number;

beforeAll(async () => {
  server = await startTestServer({ limits: { bodyLimitBytes: LIMIT } });
  port = (server.app.server.address() as AddressInfo).port;
});
afterAll(async () => {
  await server.close();
});

/** A JSON session body of exactly `bytes` bytes. */
function sessionBody(bytes: number): Buffer {
  const frame = JSON.stringify({ user_id: 'u', context: { big: '' } });
  return Buffer.from(JSON.stringify({ user_id: 'u', context: { big: 'y'.repeat(bytes - frame.length) } }));
}

function expectTooLarge(status: number, body: unknown): void {
  expect(status).toBe(413);
  const { error } = body as ErrorReply;
  expect(error.code).toBe('payload_too_large');
  expect(error.message).toContain(String(LIMIT));
}

interface Parsed {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: unknown;
  /** Bytes after this response (a next response on the same connection). */
  readonly rest: Buffer;
}

/** The first complete HTTP response (with a Content-Length) in `bytes`, or null if not all there yet. */
function parseResponse(bytes: Buffer): Parsed | null {
  const end = bytes.indexOf('\r\n\r\n');
  if (end < 0) return null;
  const [statusLine = '', ...lines] = bytes.subarray(0, end).toString('latin1').split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const length = Number(headers['content-length']);
  const start = end + 4;
  if (bytes.length < start + length) return null;
  const text = bytes.subarray(start, start + length).toString('utf8');
  return {
    status: Number(statusLine.split(' ')[1]),
    headers,
    body: text === '' ? null : JSON.parse(text),
    rest: bytes.subarray(start + length),
  };
}

interface RawOutcome {
  readonly response: Parsed | null;
  /** A socket error the client saw (ECONNRESET, EPIPE), or null. */
  readonly error: string | null;
  /** Whether the server closed the connection before the client was done. */
  readonly closedByServer: boolean;
  /** Whether every byte the client meant to send was accepted. */
  readonly wroteAll: boolean;
  readonly socket: Socket;
}

/**
 * Sends `head` then `chunks` on a raw socket, each write waiting for the last to be flushed (and `gapMs`
 * more, as a client on a slower link would), and waits until the whole response is read and every write is
 * done, or the connection closes, or `timeoutMs`. The socket is left open when the server did not close it.
 */
function rawSend(
  head: string,
  chunks: Iterable<Buffer>,
  { gapMs = 0, timeoutMs = 10_000 }: { gapMs?: number; timeoutMs?: number } = {},
): Promise<RawOutcome> {
  return new Promise((resolve, reject) => {
    // Half-open allowed: like curl, the client goes on writing its body after the server's FIN.
    const socket = connect({ port, host: '127.0.0.1', allowHalfOpen: true });
    let received = Buffer.alloc(0);
    let error: string | null = null;
    let wroteAll = false;
    let settled = false;
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no outcome in ${timeoutMs} ms`));
    }, timeoutMs);
    const settle = (closedByServer: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ response: parseResponse(received), error, closedByServer, wroteAll, socket });
    };
    const check = () => {
      if (wroteAll && parseResponse(received) !== null) settle(false);
    };
    socket.on('data', (data: Buffer) => {
      received = Buffer.concat([received, data]);
      check();
    });
    socket.on('error', (e: Error & { code?: string }) => {
      error ??= e.code ?? e.message;
    });
    socket.on('close', () => settle(true));
    const iterator = chunks[Symbol.iterator]();
    const next = (e?: (Error & { code?: string }) | null) => {
      if (e) error ??= e.code ?? e.message;
      if (e || socket.destroyed) return;
      const step = iterator.next();
      if (step.done) {
        wroteAll = true;
        check();
        return;
      }
      socket.write(step.value, (e) => (gapMs > 0 ? setTimeout(() => next(e), gapMs) : next(e)));
    };
    socket.write(head, next);
  });
}

function* pieces(body: Buffer, size = 16 * 1024): Generator<Buffer> {
  for (let at = 0; at < body.length; at += size) yield body.subarray(at, at + size);
}

function* chunked(body: Buffer, size = 16 * 1024): Generator<Buffer> {
  for (const piece of pieces(body, size))
    yield Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n')]);
  yield Buffer.from('0\r\n\r\n');
}

function head(headers: Record<string, string | number>): string {
  const lines = Object.entries({
    host: '127.0.0.1',
    authorization: `Bearer ${server.keyA}`,
    'content-type': 'application/json',
    ...headers,
  }).map(([k, v]) => `${k}: ${v}`);
  return `POST /v1/sessions HTTP/1.1\r\n${lines.join('\r\n')}\r\n\r\n`;
}

describe('a body over the limit: the client reads the 413', () => {
  it('with Content-Length 3x the limit, sent by fetch', async () => {
    for (let i = 0; i < 5; i++) {
      const reply = await call(server.url, 'POST', '/v1/sessions', {
        token: server.keyA,
        raw: sessionBody(3 * LIMIT).toString(),
      });
      expectTooLarge(reply.status, reply.body);
    }
  });

  it('with Content-Length 3x the limit, the whole body written on a raw socket', async () => {
    const body = sessionBody(3 * LIMIT);
    const out = await rawSend(head({ 'content-length': body.length }), pieces(body), { gapMs: 5 });
    expect(out.error).toBeNull();
    expect(out.wroteAll).toBe(true);
    expect(out.response).not.toBeNull();
    expectTooLarge(out.response?.status ?? 0, out.response?.body);
    // The body was read to its end: the connection still frames requests, and takes the next one.
    expect(out.closedByServer).toBe(false);
    const next = new Promise<Parsed | null>((resolve) => {
      let got = Buffer.alloc(0);
      out.socket.on('data', (data: Buffer) => {
        got = Buffer.concat([got, data]);
        const parsed = parseResponse(got);
        if (parsed) resolve(parsed);
      });
      out.socket.on('close', () => resolve(parseResponse(got)));
    });
    out.socket.write('GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n');
    expect((await next)?.status).toBe(200);
    out.socket.destroy();
  });

  it('with a chunked body, sent by fetch from a stream', async () => {
    const body = sessionBody(3 * LIMIT);
    // Sent piece by piece, as from a slower link: most of it after the server has answered.
    const iterator = pieces(body);
    const stream = new ReadableStream<Uint8Array>({
      async pull(controller) {
        await new Promise((resolve) => setTimeout(resolve, 5));
        const step = iterator.next();
        if (step.done) controller.close();
        else controller.enqueue(new Uint8Array(step.value));
      },
    });
    const response = await fetch(`${server.url}/v1/sessions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${server.keyA}`, 'content-type': 'application/json' },
      body: stream,
      duplex: 'half',
    } as RequestInit);
    expectTooLarge(response.status, await response.json());
  });

  it('with a chunked body written on a raw socket', async () => {
    const out = await rawSend(head({ 'transfer-encoding': 'chunked' }), chunked(sessionBody(3 * LIMIT)), {
      gapMs: 5,
    });
    expect(out.error).toBeNull();
    expect(out.wroteAll).toBe(true);
    expectTooLarge(out.response?.status ?? 0, out.response?.body);
    out.socket.destroy();
  });
});

const ENDLESS: [string, Record<string, string | number>][] = [
  ['a Content-Length of 1 GiB', { 'content-length': 1024 ** 3 }],
  ['an endless chunked body', { 'transfer-encoding': 'chunked' }],
];

describe('a client that keeps sending far past the limit', () => {
  it.each(ENDLESS)('with %s is cut off within seconds', async (_name, headers) => {
    const piece = Buffer.alloc(64 * 1024, 'y');
    const frame = headers['transfer-encoding'] ? Buffer.from(`${piece.length.toString(16)}\r\n`) : null;
    const cap = 256 * 1024 * 1024;
    let sent = 0;
    function* endless(): Generator<Buffer> {
      // Bounded all the same: 256 MiB, far more than the server reads.
      while (sent < cap) {
        sent += piece.length;
        yield frame ? Buffer.concat([frame, piece, Buffer.from('\r\n')]) : piece;
      }
    }
    const started = Date.now();
    const out = await rawSend(head(headers), endless(), { timeoutMs: 15_000 });
    expect(out.closedByServer).toBe(true);
    expect(out.wroteAll).toBe(false);
    expect(Date.now() - started).toBeLessThan(8_000);
    expect(sent).toBeLessThan(64 * 1024 * 1024);
  });
});

describe('a client that stops sending mid-body', () => {
  it('is cut off once the drain time is up, after the 413', async () => {
    const app = Fastify({ bodyLimit: LIMIT, logger: false });
    app.setErrorHandler(withBodyLimit(errorHandler, LIMIT, { drainMs: 300 }));
    app.post('/x', async () => ({ ok: true }));
    await app.listen({ host: '127.0.0.1', port: 0 });
    try {
      const socket = connect((app.server.address() as AddressInfo).port, '127.0.0.1');
      let received = Buffer.alloc(0);
      socket.on('data', (data: Buffer) => {
        received = Buffer.concat([received, data]);
      });
      socket.on('error', () => {});
      const started = Date.now();
      socket.write(
        `POST /x HTTP/1.1\r\nhost: a\r\ncontent-type: application/json\r\ncontent-length: ${3 * LIMIT}\r\n\r\n`,
      );
      socket.write(Buffer.alloc(1024, 'y'));
      await new Promise((resolve) => socket.once('close', resolve));
      expect(Date.now() - started).toBeGreaterThanOrEqual(250);
      expect(Date.now() - started).toBeLessThan(3_000);
      const response = parseResponse(received);
      expectTooLarge(response?.status ?? 0, response?.body);
    } finally {
      await app.close();
    }
  });
});

describe('a body under the limit', () => {
  it('is taken, by fetch and on a raw socket', async () => {
    const body = sessionBody(LIMIT - 1024);
    const reply = await call<{ id: string }>(server.url, 'POST', '/v1/sessions', {
      token: server.keyA,
      raw: body.toString(),
    });
    expect(reply.status).toBe(201);
    expect(reply.body.id).toBeTruthy();
    const out = await rawSend(head({ 'content-length': body.length }), pieces(body));
    expect(out.error).toBeNull();
    expect(out.response?.status).toBe(201);
    out.socket.destroy();
  });
});
