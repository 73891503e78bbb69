import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpRequestError, httpRequest } from '../../src/net/http-request.js';

let server: Server;
let base: string;
const sockets = new Set<string>();

beforeAll(async () => {
  server = createServer((req, res) => {
    sockets.add(`${req.socket.remotePort}`);
    if (req.url === '/slow') return; // never answers
    if (req.url === '/drop') {
      req.socket.destroy();
      return;
    }
    let body = '';
    req.on('data', (chunk) => {
      body += chunk;
    });
    req.on('end', () => {
      res.writeHead(req.url === '/missing' ? 404 : 200, {
        'content-type': 'application/json',
        'x-echo': 'yes',
      });
      res.end(JSON.stringify({ method: req.method, body, length: req.headers['content-length'] ?? null }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

async function failure(promise: Promise<unknown>): Promise<HttpRequestError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(HttpRequestError);
  return error as HttpRequestError;
}

describe('httpRequest', () => {
  it('sends the body with its length (UTF-8 bytes) and answers status, headers and body', async () => {
    const answer = await httpRequest(`${base}/echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"name":"Zoë"}',
      timeoutMs: 5_000,
    });
    expect(answer.status).toBe(200);
    expect(answer.headers['x-echo']).toBe('yes');
    expect(JSON.parse(answer.body)).toEqual({ method: 'POST', body: '{"name":"Zoë"}', length: '15' });
    const missing = await httpRequest(`${base}/missing`, { method: 'GET', timeoutMs: 5_000 });
    expect(missing.status).toBe(404);
  });

  it('keeps connections alive between calls', async () => {
    sockets.clear();
    for (let i = 0; i < 5; i++) await httpRequest(`${base}/echo`, { method: 'GET', timeoutMs: 5_000 });
    expect(sockets.size).toBe(1);
  });

  it('tells a time-out, an abort, a refused connection and a dropped one apart', async () => {
    expect((await failure(httpRequest(`${base}/slow`, { method: 'GET', timeoutMs: 100 }))).kind).toBe(
      'timeout',
    );
    const controller = new AbortController();
    const aborted = httpRequest(`${base}/slow`, {
      method: 'GET',
      timeoutMs: 5_000,
      signal: controller.signal,
    });
    setTimeout(() => controller.abort(), 50);
    expect((await failure(aborted)).kind).toBe('aborted');
    expect(
      (
        await failure(
          httpRequest(`${base}/echo`, { method: 'GET', timeoutMs: 1_000, signal: AbortSignal.abort() }),
        )
      ).kind,
    ).toBe('aborted');
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    expect(
      (await failure(httpRequest(`http://127.0.0.1:${port}/`, { method: 'GET', timeoutMs: 1_000 }))).kind,
    ).toBe('refused');
    expect((await failure(httpRequest(`${base}/drop`, { method: 'GET', timeoutMs: 1_000 }))).kind).toBe(
      'network',
    );
  });
});
