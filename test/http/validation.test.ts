/**
 * Bad input answers 4xx naming what is wrong, never 500, and changes nothing stored.
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JsonObject } from '../../src/core/json.js';
import { call, rand, startTestServer, type TestServer } from './harness.js';
import { validationCases } from './validation-cases.js';

let server: TestServer;
let sessionId: string;
let taskId: string;

beforeAll(async () => {
  server = await startTestServer({
    limits: { bodyLimitBytes: 64 * 1024, maxMessageChars: 1000, maxMessagesPerRequest: 5 },
  });
  const scope = { tenant_id: server.tenantA, user_id: server.alice };
  sessionId = (await server.store.createSession(scope, { context: { n: 1 } })).id;
  await server.store.appendMessages(scope, sessionId, [{ role: 'user', content: 'first' }]);
  taskId = (
    await server.store.createTask(scope, { session_id: sessionId, type: 'demo', state: 'COLLECTING' })
  ).id;
});
afterAll(async () => {
  await server.close();
});

async function state(): Promise<JsonObject> {
  const scope = { tenant_id: server.tenantA, user_id: server.alice };
  const session = await server.store.getSession(scope, sessionId);
  const task = await server.store.getTask(scope, taskId);
  const sessions = await server.store.listSessions({ tenant_id: server.tenantA }, { limit: 500 });
  const actions = await server.store.listActions({ tenant_id: server.tenantA }, { limit: 500 });
  return {
    session: session ? [session.version, session.status, session.context] : null,
    messages: (await server.store.listMessages(scope, sessionId)).length,
    task: task ? [task.version, task.state] : null,
    sessions: sessions.items.length,
    actions: actions.items.length,
  };
}

const msg = (content: string) => ({ role: 'user', content });

const CASES = validationCases({
  sessionId: () => sessionId,
  taskId: () => taskId,
  alice: () => server.alice,
});

describe('bad input', () => {
  for (const c of CASES) {
    it(`${c.name}: ${c.status} ${c.code}, nothing stored changes`, async () => {
      const before = await state();
      const token = c.path() === '/v1/tokens' ? server.keyA : server.tokens.alice;
      const reply = await call(server.url, c.method, c.path(), {
        token,
        ...(c.body !== undefined ? { body: typeof c.body === 'function' ? c.body() : c.body } : {}),
        ...(c.raw !== undefined ? { raw: c.raw } : {}),
        ...(c.headers ? { headers: c.headers } : {}),
      });
      expect(reply.status).toBe(c.status);
      expect(reply.body.error.code).toBe(c.code);
      expect(reply.body.error.message.toLowerCase()).toContain(c.names.toLowerCase());
      expect(await state()).toEqual(before);
    });
  }

  it('an illegal task transition is refused (4xx, never 500) and changes nothing', async () => {
    const before = await state();
    const reply = await call(server.url, 'PATCH', `/v1/tasks/${taskId}`, {
      token: server.tokens.alice,
      headers: { 'if-match': '1' },
      body: { state: 'DONE' },
    });
    // The SQL and Redis stores say `illegal_transition` (409); the memory store says `invalid_request` (400).
    expect([400, 409]).toContain(reply.status);
    expect(reply.body.error.message).toContain('DONE');
    expect(await state()).toEqual(before);
  });

  it('an unknown field deep inside is named with its path', async () => {
    const reply = await call(server.url, 'POST', `/v1/sessions/${sessionId}/messages`, {
      token: server.tokens.alice,
      body: { messages: [msg('ok'), { role: 'user', content: 'x', mood: 'happy' }] },
    });
    expect(reply.status).toBe(400);
    expect(reply.body.error.message).toContain('body.messages[1].mood');
  });

  it('a value that is not plain JSON for the store (-0 aside) is refused, not a 500', async () => {
    const reply = await call(server.url, 'POST', '/v1/sessions', {
      token: server.tokens.alice,
      raw: `{"context":{"k":"\\udc00"}}`,
    });
    expect(reply.status).toBe(400);
    expect(reply.body.error.code).toBe('invalid_request');
  });

  it('an empty body sent as JSON is no body: DELETE answers 204, a route that needs a body names it', async () => {
    const scope = { tenant_id: server.tenantA, user_id: server.alice };
    const doomed = (await server.store.createSession(scope, {})).id;
    const headers = { 'content-type': 'application/json' };
    const gone = await call(server.url, 'DELETE', `/v1/sessions/${doomed}`, {
      token: server.tokens.alice,
      headers,
      raw: '',
    });
    expect(gone.status).toBe(204);
    expect((await server.store.getSession(scope, doomed))?.status).toBe('ended');
    const before = await state();
    const none = await call(server.url, 'POST', `/v1/sessions/${sessionId}/messages`, {
      token: server.tokens.alice,
      headers,
      raw: '',
    });
    expect(none.status).toBe(400);
    expect(none.body.error.message).toMatch(/^body: /);
    expect(await state()).toEqual(before);
  });

  it("what Node's HTTP parser refuses answers in the same format: oversized headers 431, bytes that are not HTTP 400", async () => {
    const big = await call(server.url, 'GET', '/v1/sessions', {
      token: server.tokens.alice,
      headers: { 'x-padding': 'p'.repeat(20_000) },
    });
    expect(big.status).toBe(431);
    expect(big.body.error.code).toBe('invalid_request');
    expect(big.body.error.message).toContain('headers');
    const { hostname, port } = new URL(server.url);
    const raw = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(port), hostname, () =>
        socket.write('GET / HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n'),
      );
      let text = '';
      socket.on('data', (chunk) => {
        text += chunk.toString();
      });
      socket.on('close', () => resolve(text));
      socket.on('error', reject);
    });
    expect(raw).toMatch(/^HTTP\/1\.1 400 /);
    expect(JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4))).toEqual({
      error: { code: 'invalid_request', message: 'the request is not valid HTTP' },
    });
  });

  it('the Authorization scheme is case-insensitive (RFC 9110): "bearer" and "BEARER" are Bearer', async () => {
    for (const scheme of ['bearer', 'BEARER']) {
      const reply = await fetch(`${server.url}/v1/sessions/${sessionId}`, {
        headers: { authorization: `${scheme} ${server.tokens.alice}` },
      });
      expect(reply.status).toBe(200);
    }
    const basic = await fetch(`${server.url}/v1/sessions/${sessionId}`, {
      headers: { authorization: `Basic ${server.tokens.alice}` },
    });
    expect(basic.status).toBe(401);
  });

  it('every request gets a request id back, and a given one is kept', async () => {
    const given = rand('req-');
    const reply = await call(server.url, 'GET', '/healthz', { headers: { 'x-request-id': given } });
    expect(reply.headers.get('x-request-id')).toBe(given);
    const other = await call(server.url, 'GET', '/healthz');
    expect(other.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });
});
