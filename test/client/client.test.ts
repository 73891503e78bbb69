/**
 * agentstate/client against a real server over loopback (built-in agents, rules model): sessions and turns,
 * errors typed by the server's code, one effect for a POST retried after its connection broke (the same
 * Idempotency-Key), and the codes the client knows are the server's.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { type AddressInfo, createServer as createNetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LinkedRuntime, linkRuntime } from '../../src/cli/commands/runtime-link.js';
import {
  AgentStateHttpError,
  createClient,
  isAgentStateHttpError,
  SERVER_ERROR_STATUS,
} from '../../src/client/index.js';
import { STATUS_OF_CODE } from '../../src/http/errors.js';
import { openStore } from '../../src/store/open.js';
import type { StateStore } from '../../src/store/types.js';
import { startTestServer, type TestServer } from '../http/harness.js';

let server: TestServer;
let store: StateStore;
let runtime: LinkedRuntime;
const dataDir = mkdtempSync(join(tmpdir(), 'agentstate-client-'));

beforeAll(async () => {
  store = await openStore('memory:');
  runtime = await linkRuntime(dataDir);
  server = await startTestServer({ store, agents: runtime.setup });
});
afterAll(async () => {
  await server.close();
  await runtime.close();
  await store.close();
  rmSync(dataDir, { recursive: true, force: true });
});

/** A fetch that records each request's method, path and Idempotency-Key before sending it on. */
function recordingFetch(log: { method: string; path: string; key: string | null }[]) {
  return (request: Request) => {
    log.push({
      method: request.method,
      path: new URL(request.url).pathname,
      key: request.headers.get('idempotency-key'),
    });
    return fetch(request);
  };
}

/** A loopback port nothing listens on: one a server was given, then closed. */
async function closedPort(): Promise<number> {
  const probe = createNetServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

async function rejection(promise: Promise<unknown>): Promise<AgentStateHttpError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(AgentStateHttpError);
  return error as AgentStateHttpError;
}

describe('agentstate/client on a real server', () => {
  it('creates a session, runs turns and reads back the messages, typed end to end', async () => {
    const client = createClient({ baseUrl: `${server.url}/`, token: server.tokens.alice });
    const session = await client.sessions.create({ agent: 'flight_booking' });
    expect(session.user_id).toBe(server.alice);
    expect(session.agent).toBe('flight_booking');
    const turn = await client.sessions.turn(session.id, 'I want to book a flight from Paris to Lisbon');
    expect(turn.reply.length).toBeGreaterThan(0);
    expect(turn.tasks[0]?.state).toBe('COLLECTING');
    const read = await client.sessions.get(session.id);
    expect(read.open_tasks.map((t) => t.id)).toEqual([turn.tasks[0]?.id]);
    const messages = await client.messages.list(session.id, { after_seq: 0, limit: 10 });
    expect(messages.items.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(messages.next_cursor).toBeNull();
    const tasks = await client.tasks.list({ session_id: session.id });
    expect(tasks.items).toHaveLength(1);
    const ended = await client.sessions.update(session.id, read.version, { status: 'ended' });
    expect(ended.status).toBe('ended');
  });

  it('a tenant key mints a user token the client then acts with; memory round-trips', async () => {
    const tenant = createClient({ baseUrl: server.url, token: server.keyA });
    const minted = await tenant.tokens.mint({ user_id: 'dora', ttl_seconds: 600 });
    const dora = createClient({ baseUrl: server.url, token: () => minted.token });
    const ref = { user_id: 'dora', namespace: 'prefs', key: 'seat' };
    await dora.memory.put(ref, { value: { side: 'window' } });
    expect((await dora.memory.get(ref)).value).toEqual({ side: 'window' });
    expect((await dora.memory.list({ user_id: 'dora', namespace: 'prefs' })).items).toHaveLength(1);
    await dora.memory.delete(ref);
    expect((await rejection(dora.memory.get(ref))).code).toBe('not_found');
  });

  it("throws AgentStateHttpError with the server's code, status and details", async () => {
    const alice = createClient({ baseUrl: server.url, token: server.tokens.alice });
    const bob = createClient({ baseUrl: server.url, token: server.tokens.bob });
    const session = await alice.sessions.create({ agent: 'flight_booking' });

    const notFound = await rejection(bob.sessions.get(session.id));
    expect(notFound).toMatchObject({ code: 'not_found', status: 404, request: 'GET /v1/sessions/{id}' });
    expect(isAgentStateHttpError(notFound, 'not_found')).toBe(true);

    const invalid = await rejection(alice.sessions.create({ agent: 'flight_booking', ttl_seconds: 0 }));
    expect(invalid).toMatchObject({ code: 'invalid_request', status: 400 });
    expect(invalid.message).toContain('ttl_seconds');
    expect(invalid.details).toHaveProperty('issues');

    const stale = await rejection(
      alice.sessions.update(session.id, session.version + 5, { status: 'paused' }),
    );
    expect(stale).toMatchObject({ code: 'version_conflict', status: 409 });

    const anonymous = createClient({ baseUrl: server.url });
    expect((await rejection(anonymous.sessions.list())).code).toBe('unauthorized');
  });

  it('a connection refused is code network, status 0, after its bounded retries', async () => {
    const log: { method: string; path: string; key: string | null }[] = [];
    const port = await closedPort();
    const closed = createClient({
      baseUrl: `http://127.0.0.1:${port}`,
      retries: { retries: 2, baseDelayMs: 1 },
      fetch: recordingFetch(log),
    });
    const error = await rejection(closed.health());
    expect(error).toMatchObject({ code: 'network', status: 0, retryAfterMs: null });
    expect(error.message).toBe(`cannot reach the server at http://127.0.0.1:${port} (ECONNREFUSED)`);
    expect(log).toHaveLength(3);
  });

  it('sends a fresh Idempotency-Key per POST, and the same one when it sends a POST again', async () => {
    const log: { method: string; path: string; key: string | null }[] = [];
    const client = createClient({
      baseUrl: server.url,
      token: server.tokens.alice,
      fetch: recordingFetch(log),
    });
    const a = await client.sessions.create({ agent: 'flight_booking' });
    const b = await client.sessions.create({ agent: 'flight_booking' });
    expect(a.id).not.toBe(b.id);
    await client.sessions.get(a.id);
    const keys = log.map((entry) => entry.key);
    expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(keys[1]).toMatch(/^[0-9a-f-]{36}$/);
    expect(keys[0]).not.toBe(keys[1]);
    expect(keys[2]).toBeNull();

    const off = createClient({ baseUrl: server.url, token: server.tokens.alice, idempotencyKeys: false });
    const seen: (string | null)[] = [];
    await off.raw.POST('/v1/sessions', {
      body: {},
      fetch: (request: Request) => {
        seen.push(request.headers.get('idempotency-key'));
        return fetch(request);
      },
    });
    expect(seen).toEqual([null]);
  });

  it('a turn whose answer was lost is sent again with its key and runs once', async () => {
    const client = createClient({ baseUrl: server.url, token: server.tokens.alice });
    const session = await client.sessions.create({ agent: 'flight_booking' });
    const sent: { key: string | null; replayed: string | null }[] = [];
    // The first attempt reaches the server and runs; its answer is lost on the way back.
    const losing = createClient({
      baseUrl: server.url,
      token: server.tokens.alice,
      retries: { retries: 2, baseDelayMs: 1 },
      fetch: async (request) => {
        const response = await fetch(request);
        sent.push({
          key: request.headers.get('idempotency-key'),
          replayed: response.headers.get('idempotent-replayed'),
        });
        if (sent.length === 1) throw new TypeError('fetch failed: the connection was reset');
        return response;
      },
    });
    const turn = await losing.sessions.turn(session.id, 'I want to book a flight from Paris to Lisbon');
    expect(turn.tasks[0]?.state).toBe('COLLECTING');
    expect(sent).toHaveLength(2);
    expect(sent[0]?.key).not.toBeNull();
    expect(sent[1]).toEqual({ key: sent[0]?.key, replayed: 'true' });
    const messages = await client.messages.list(session.id);
    expect(messages.items.filter((m) => m.role === 'user')).toHaveLength(1);
    expect((await client.tasks.list({ session_id: session.id })).items).toHaveLength(1);
  });

  it('knows every code the server answers, with its status', () => {
    const { closed: _closed, ...served } = STATUS_OF_CODE;
    expect(SERVER_ERROR_STATUS).toEqual(served);
  });
});
