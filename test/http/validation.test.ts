/**
 * Bad input answers 4xx naming what is wrong, never 500, and changes nothing stored.
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JsonObject } from '../../src/core/json.js';
import { call, rand, startTestServer, type TestServer } from './harness.js';

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

interface Case {
  readonly name: string;
  readonly method: string;
  readonly path: () => string;
  readonly body?: unknown;
  readonly raw?: string;
  readonly headers?: Record<string, string>;
  readonly status: number;
  readonly code: string;
  /** A word the message must contain: the field or the limit it names. */
  readonly names: string;
}

const longText = 'x'.repeat(1001);
const msg = (content: string) => ({ role: 'user', content });

const CASES: Case[] = [
  {
    name: 'malformed JSON',
    method: 'POST',
    path: () => '/v1/sessions',
    raw: '{"user_id": ',
    status: 400,
    code: 'invalid_request',
    names: 'JSON',
  },
  {
    name: 'JSON nested too deep',
    method: 'POST',
    path: () => '/v1/sessions',
    raw: `{"context":{"a":${'['.repeat(5000)}${']'.repeat(5000)}}}`,
    status: 400,
    code: 'invalid_request',
    names: 'deeper',
  },
  {
    name: 'body is not JSON',
    method: 'POST',
    path: () => '/v1/sessions',
    raw: 'user_id=a',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    status: 400,
    code: 'invalid_request',
    names: 'json',
  },
  {
    name: '__proto__ key',
    method: 'POST',
    path: () => '/v1/sessions',
    raw: `{"user_id":"${'u1'}","__proto__":{"x":1}}`,
    status: 400,
    code: 'invalid_request',
    names: 'JSON',
  },
  {
    name: 'unknown field',
    method: 'POST',
    path: () => '/v1/sessions',
    body: { user_id: 'u', colour: 'red' },
    status: 400,
    code: 'invalid_request',
    names: 'colour',
  },
  {
    name: 'wrong type',
    method: 'POST',
    path: () => '/v1/sessions',
    body: { user_id: 'u', ttl_seconds: 'soon' },
    status: 400,
    code: 'invalid_request',
    names: 'ttl_seconds',
  },
  {
    name: 'context not an object',
    method: 'POST',
    path: () => '/v1/sessions',
    body: { user_id: 'u', context: [1, 2] },
    status: 400,
    code: 'invalid_request',
    names: 'context',
  },
  {
    name: 'bad user id',
    method: 'POST',
    path: () => '/v1/sessions',
    body: { user_id: 'a b/c' },
    status: 400,
    code: 'invalid_request',
    names: 'user_id',
  },
  {
    name: 'negative ttl',
    method: 'POST',
    path: () => '/v1/sessions',
    body: { user_id: 'u', ttl_seconds: -5 },
    status: 400,
    code: 'invalid_request',
    names: 'ttl_seconds',
  },
  {
    name: 'oversized body',
    method: 'POST',
    path: () => '/v1/sessions',
    body: { user_id: 'u', context: { big: 'y'.repeat(70_000) } },
    status: 413,
    code: 'payload_too_large',
    names: 'larger',
  },
  {
    name: 'overlong message',
    method: 'POST',
    path: () => `/v1/sessions/${sessionId}/messages`,
    body: { messages: [msg(longText)] },
    status: 400,
    code: 'invalid_request',
    names: 'messages[0].content',
  },
  {
    name: 'too many messages',
    method: 'POST',
    path: () => `/v1/sessions/${sessionId}/messages`,
    body: { messages: [1, 2, 3, 4, 5, 6].map((i) => msg(`m${i}`)) },
    status: 400,
    code: 'invalid_request',
    names: 'messages',
  },
  {
    name: 'no messages',
    method: 'POST',
    path: () => `/v1/sessions/${sessionId}/messages`,
    body: { messages: [] },
    status: 400,
    code: 'invalid_request',
    names: 'messages',
  },
  {
    name: 'bad role',
    method: 'POST',
    path: () => `/v1/sessions/${sessionId}/messages`,
    body: { messages: [{ role: 'god', content: 'x' }] },
    status: 400,
    code: 'invalid_request',
    names: 'role',
  },
  {
    name: 'lone surrogate',
    method: 'POST',
    path: () => `/v1/sessions/${sessionId}/messages`,
    raw: '{"messages":[{"role":"user","content":"\\ud800"}]}',
    status: 400,
    code: 'invalid_request',
    names: 'surrogate',
  },
  {
    name: 'invalid session id',
    method: 'GET',
    path: () => '/v1/sessions/sess_nope',
    status: 400,
    code: 'invalid_request',
    names: 'params.id',
  },
  {
    name: 'task id where a session id belongs',
    method: 'GET',
    path: () => `/v1/sessions/${taskId}`,
    status: 400,
    code: 'invalid_request',
    names: 'params.id',
  },
  {
    name: 'invalid task id',
    method: 'PATCH',
    path: () => '/v1/tasks/task_..%2F..%2Fetc',
    headers: { 'if-match': '1' },
    body: {},
    status: 400,
    code: 'invalid_request',
    names: 'id',
  },
  {
    name: 'missing If-Match',
    method: 'PATCH',
    path: () => `/v1/sessions/${sessionId}`,
    body: { status: 'paused' },
    status: 400,
    code: 'invalid_request',
    names: 'if-match',
  },
  {
    name: 'invalid If-Match',
    method: 'PATCH',
    path: () => `/v1/sessions/${sessionId}`,
    headers: { 'if-match': 'yesterday' },
    body: { status: 'paused' },
    status: 400,
    code: 'invalid_request',
    names: 'if-match',
  },
  {
    name: 'invalid If-Match on a task',
    method: 'PATCH',
    path: () => `/v1/tasks/${taskId}`,
    headers: { 'if-match': '*' },
    body: { status_line: 'x' },
    status: 400,
    code: 'invalid_request',
    names: 'if-match',
  },
  {
    name: 'a cause without a state change (it would be dropped)',
    method: 'PATCH',
    path: () => `/v1/tasks/${taskId}`,
    headers: { 'if-match': '1' },
    body: { cause: 'x' },
    status: 400,
    code: 'invalid_request',
    names: 'body.cause: only with a state change',
  },
  {
    name: 'setting a session expired',
    method: 'PATCH',
    path: () => `/v1/sessions/${sessionId}`,
    headers: { 'if-match': '1' },
    body: { status: 'expired' },
    status: 400,
    code: 'invalid_request',
    names: 'status',
  },
  {
    name: 'limit 0',
    method: 'GET',
    path: () => '/v1/sessions?limit=0',
    status: 400,
    code: 'invalid_request',
    names: 'limit',
  },
  {
    name: 'limit too big',
    method: 'GET',
    path: () => '/v1/tasks?limit=100000',
    status: 400,
    code: 'invalid_request',
    names: 'limit',
  },
  {
    name: 'limit not a number',
    method: 'GET',
    path: () => `/v1/sessions/${sessionId}/messages?limit=ten`,
    status: 400,
    code: 'invalid_request',
    names: 'limit',
  },
  {
    name: 'unknown query field',
    method: 'GET',
    path: () => '/v1/sessions?owner=x',
    status: 400,
    code: 'invalid_request',
    names: 'owner',
  },
  {
    name: 'bad task state filter',
    method: 'GET',
    path: () => '/v1/tasks?state=DONE,SLEEPING',
    status: 400,
    code: 'invalid_request',
    names: 'state',
  },
  {
    name: 'bad action status',
    method: 'PATCH',
    path: () => '/v1/actions/act_aaaaaaaaaaaaaaaaaaaaaaaaaa',
    body: { status: 'MAYBE' },
    status: 400,
    code: 'invalid_request',
    names: 'status',
  },
  {
    name: 'action without key',
    method: 'POST',
    path: () => '/v1/actions',
    body: () => ({ task_id: taskId, type: 't', params: {} }),
    status: 400,
    code: 'invalid_request',
    names: 'idempotency_key',
  },
  {
    name: 'overlong action type',
    method: 'POST',
    path: () => '/v1/actions',
    body: () => ({ task_id: taskId, type: 't'.repeat(300), params: {}, idempotency_key: 'k' }),
    status: 400,
    code: 'invalid_request',
    names: 'type',
  },
  {
    name: 'memory namespace with a space',
    method: 'GET',
    path: () => `/v1/users/${server.alice}/memory/bad%20ns/k`,
    status: 400,
    code: 'invalid_request',
    names: 'namespace',
  },
  {
    name: 'memory without value',
    method: 'PUT',
    path: () => `/v1/users/${server.alice}/memory/ns/k`,
    body: { ttl_seconds: 5 },
    status: 400,
    code: 'invalid_request',
    names: 'value',
  },
  {
    name: 'turn with empty input',
    method: 'POST',
    path: () => `/v1/sessions/${sessionId}/turns`,
    body: { input: '' },
    status: 400,
    code: 'invalid_request',
    names: 'input',
  },
  {
    name: 'bad Idempotency-Key',
    method: 'POST',
    path: () => `/v1/sessions/${sessionId}/messages`,
    headers: { 'idempotency-key': 'é'.repeat(3) },
    body: { messages: [msg('x')] },
    status: 400,
    code: 'invalid_request',
    names: 'Idempotency-Key',
  },
  {
    name: 'token ttl too long',
    method: 'POST',
    path: () => '/v1/tokens',
    body: { user_id: 'u', ttl_seconds: 10 ** 9 },
    status: 400,
    code: 'invalid_request',
    names: 'ttl_seconds',
  },
  {
    name: 'a lone UTF-16 surrogate in a string',
    method: 'POST',
    path: () => `/v1/sessions/${sessionId}/messages`,
    raw: '{"messages":[{"role":"user","content":"a\\ud800b"}]}',
    status: 400,
    code: 'invalid_request',
    names: 'body.messages[0].content: holds a lone UTF-16 surrogate',
  },
  {
    name: 'a lone UTF-16 surrogate in a key',
    method: 'POST',
    path: () => '/v1/sessions',
    raw: '{"context":{"k\\udc00":1}}',
    status: 400,
    code: 'invalid_request',
    names: 'body.context: a key holds a lone UTF-16 surrogate',
  },
  {
    name: 'an integer beyond 2^53 (it would be stored as another number)',
    method: 'PUT',
    path: () => '/v1/users/u/memory/orders/last',
    raw: '{"value":{"ids":[1,{"order_id":9007199254740993}]}}',
    status: 400,
    code: 'invalid_request',
    names: 'body.value.ids[1].order_id: 9007199254740993 is an integer beyond 2^53',
  },
  {
    name: 'a number that underflows to 0',
    method: 'POST',
    path: () => '/v1/sessions',
    raw: '{"context":{"note":"1e-400 in a string is text","tiny":1e-400}}',
    status: 400,
    code: 'invalid_request',
    names: 'body.context.tiny: 1e-400 is too small for a number',
  },
  {
    name: 'a number too large for a double',
    method: 'POST',
    path: () => '/v1/sessions',
    raw: '{"context":{"big":1e999}}',
    status: 400,
    code: 'invalid_request',
    names: 'body.context.big: 1e999 is too large',
  },
  {
    name: '-0 (JSON storage would keep it as 0)',
    method: 'POST',
    path: () => '/v1/sessions',
    raw: '{"context":{"ab":[0,-0]}}',
    status: 400,
    code: 'invalid_request',
    names: 'body.context.ab[1]: -0 is not representable in JSON; use 0',
  },
  {
    name: 'a field a tool call does not have (it would be dropped)',
    method: 'POST',
    path: () => `/v1/sessions/${sessionId}/messages`,
    body: {
      messages: [
        {
          role: 'assistant',
          content: '',
          tool_calls: [{ id: 'c1', type: 'function', name: 'f', arguments: {} }],
        },
      ],
    },
    status: 400,
    code: 'invalid_request',
    names: 'body.messages[0].tool_calls[0].type',
  },
  {
    name: 'a compressed body',
    method: 'POST',
    path: () => '/v1/sessions',
    body: { context: { n: 2 } },
    headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
    status: 400,
    code: 'invalid_request',
    names: 'content-encoding: "gzip" is not supported',
  },
  {
    name: 'a path parameter longer than any id',
    method: 'GET',
    path: () => `/v1/sessions/sess_${'a'.repeat(200)}`,
    status: 400,
    code: 'invalid_request',
    names: 'longer than 100 characters',
  },
  {
    name: 'a malformed percent-encoding in the path',
    method: 'PATCH',
    path: () => '/v1/sessions/%zz',
    body: { context: { n: 2 } },
    headers: { 'content-type': 'application/json', 'if-match': '1' },
    status: 400,
    code: 'invalid_request',
    names: 'percent-encoding',
  },
  {
    name: 'unknown route',
    method: 'GET',
    path: () => '/v1/nothing',
    status: 404,
    code: 'not_found',
    names: '/v1/nothing',
  },
];

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
