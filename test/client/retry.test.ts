/**
 * The client's retries against a small local server that answers what each test scripts: a 429 with
 * `Retry-After` is waited for, then the 200 is the answer; waits beyond the bound and retries beyond the
 * count end in a typed error; a POST keeps its key across attempts.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { AgentStateHttpError, createClient } from '../../src/client/index.js';

interface Seen {
  readonly method: string;
  readonly url: string;
  readonly key: string | undefined;
  readonly at: number;
}

interface Scripted {
  readonly status: number;
  readonly headers?: Record<string, string>;
  readonly body: unknown;
}

let server: Server | null = null;

/** Serves `script` in order (the last answer again once it runs out); records every request. */
async function scripted(script: Scripted[]): Promise<{ url: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  server = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      seen.push({
        method: request.method ?? '',
        url: request.url ?? '',
        key: request.headers['idempotency-key'] as string | undefined,
        at: performance.now(),
      });
      const answer = script[Math.min(seen.length, script.length) - 1] as Scripted;
      response.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers });
      response.end(JSON.stringify(answer.body));
    });
  });
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

afterEach(async () => {
  await new Promise<void>((resolve) => (server === null ? resolve() : server.close(() => resolve())));
  server = null;
});

const limited = (retryAfter: string): Scripted => ({
  status: 429,
  headers: { 'retry-after': retryAfter },
  body: { error: { code: 'rate_limited', message: 'too many requests; retry in 1 second' } },
});

describe('retries', () => {
  it('waits the Retry-After of a 429, then answers the 200', async () => {
    const { url, seen } = await scripted([limited('1'), { status: 200, body: { status: 'ok' } }]);
    const started = performance.now();
    const answer = await createClient({ baseUrl: url }).health();
    expect(answer).toEqual({ status: 'ok' });
    expect(seen).toHaveLength(2);
    const waited = (seen[1]?.at ?? 0) - (seen[0]?.at ?? 0);
    expect(waited).toBeGreaterThanOrEqual(950);
    expect(performance.now() - started).toBeLessThan(5000);
  });

  it('a POST sent again after a 429 carries the same Idempotency-Key', async () => {
    const session = { id: 'ses_1', agent: null };
    const { url, seen } = await scripted([limited('0'), limited('0'), { status: 201, body: session }]);
    const made = await createClient({ baseUrl: url, token: 'k'.repeat(20) }).sessions.create({});
    expect(made).toEqual(session);
    expect(seen.map((s) => s.method)).toEqual(['POST', 'POST', 'POST']);
    expect(new Set(seen.map((s) => s.key)).size).toBe(1);
    expect(seen[0]?.key).toBeDefined();
  });

  it('does not wait a Retry-After beyond maxDelayMs: the error says how long the server asked', async () => {
    const { url, seen } = await scripted([limited('120'), { status: 200, body: { status: 'ok' } }]);
    const client = createClient({ baseUrl: url, retries: { retries: 3, maxDelayMs: 2000 } });
    const error = await client.health().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AgentStateHttpError);
    expect(error).toMatchObject({ code: 'rate_limited', status: 429, retryAfterMs: 120_000 });
    expect(seen).toHaveLength(1);
  });

  it('gives up on a 503 after the retries it was given', async () => {
    const unavailable: Scripted = {
      status: 503,
      body: { error: { code: 'store_unavailable', message: 'the store is closed' } },
    };
    const { url, seen } = await scripted([unavailable]);
    const client = createClient({ baseUrl: url, retries: { retries: 2, baseDelayMs: 5 } });
    const error = await client.health().catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'store_unavailable', status: 503, retryAfterMs: null });
    expect(seen).toHaveLength(3);
  });

  it('does not send again what is not a 429, 503 or failed connection', async () => {
    const { url, seen } = await scripted([{ status: 502, body: '<html>bad gateway</html>' }]);
    const error = await createClient({ baseUrl: url })
      .health()
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'unexpected_response', status: 502 });
    expect(seen).toHaveLength(1);
  });

  it('retries: false sends once', async () => {
    const { url, seen } = await scripted([limited('0'), { status: 200, body: { status: 'ok' } }]);
    const error = await createClient({ baseUrl: url, retries: false })
      .health()
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'rate_limited', retryAfterMs: 0 });
    expect(seen).toHaveLength(1);
  });
});
