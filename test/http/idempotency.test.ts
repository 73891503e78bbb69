/**
 * Retries: the same Idempotency-Key with the same body returns the first answer and changes nothing more;
 * with another body it answers 409; keys belong to the credential's tenant and user. If-Match conflicts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Message, Session } from '../../src/core/model.js';
import { call, rand, startTestServer, type TestServer } from './harness.js';

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.close();
});

async function newSession(token = server.tokens.alice): Promise<Session> {
  const reply = await call<Session>(server.url, 'POST', '/v1/sessions', { token, body: {} });
  expect(reply.status).toBe(201);
  return reply.body;
}

describe('Idempotency-Key', () => {
  it('a replay returns the first answer and appends nothing more', async () => {
    const session = await newSession();
    const key = rand('idem-');
    const body = { messages: [{ role: 'user', content: 'book me a flight' }] };
    const path = `/v1/sessions/${session.id}/messages`;
    const headers = { 'idempotency-key': key };
    const first = await call<{ items: Message[] }>(server.url, 'POST', path, {
      token: server.tokens.alice,
      body,
      headers,
    });
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const again = await call<{ items: Message[] }>(server.url, 'POST', path, {
      token: server.tokens.alice,
      body,
      headers,
    });
    expect(again.status).toBe(201);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    const stored = await server.store.listMessages(
      { tenant_id: server.tenantA, user_id: server.alice },
      session.id,
    );
    expect(stored.map((m) => m.seq)).toEqual([1]);
  });

  it('the same key with a different body answers 409 and changes nothing', async () => {
    const session = await newSession();
    const path = `/v1/sessions/${session.id}/messages`;
    const headers = { 'idempotency-key': rand('idem-') };
    const token = server.tokens.alice;
    await call(server.url, 'POST', path, {
      token,
      headers,
      body: { messages: [{ role: 'user', content: 'a' }] },
    });
    const other = await call(server.url, 'POST', path, {
      token,
      headers,
      body: { messages: [{ role: 'user', content: 'b' }] },
    });
    expect(other.status).toBe(409);
    expect(other.body.error.code).toBe('conflict');
    expect(other.body.error.message).toContain('Idempotency-Key');
    const stored = await server.store.listMessages(
      { tenant_id: server.tenantA, user_id: server.alice },
      session.id,
    );
    expect(stored.map((m) => m.content)).toEqual(['a']);
  });

  it('the same key on another path is another request: 409', async () => {
    const headers = { 'idempotency-key': rand('idem-') };
    const token = server.tokens.alice;
    expect((await call(server.url, 'POST', '/v1/sessions', { token, headers, body: {} })).status).toBe(201);
    const s = await newSession();
    const other = await call(server.url, 'POST', `/v1/sessions/${s.id}/messages`, {
      token,
      headers,
      body: { messages: [{ role: 'user', content: 'x' }] },
    });
    expect(other.status).toBe(409);
  });

  it('keys are scoped to the credential: another user with the same key gets its own answer', async () => {
    const headers = { 'idempotency-key': rand('idem-') };
    const a = await call<Session>(server.url, 'POST', '/v1/sessions', {
      token: server.tokens.alice,
      headers,
      body: {},
    });
    const b = await call<Session>(server.url, 'POST', '/v1/sessions', {
      token: server.tokens.bob,
      headers,
      body: {},
    });
    const c = await call<Session>(server.url, 'POST', '/v1/sessions', {
      token: server.tokens.carol,
      headers,
      body: {},
    });
    expect([a.status, b.status, c.status]).toEqual([201, 201, 201]);
    expect(new Set([a.body.id, b.body.id, c.body.id]).size).toBe(3);
    expect(b.body.user_id).toBe(server.bob);
    expect(b.headers.get('idempotent-replayed')).toBeNull();
  });

  it('a replayed session creation returns the same session, and only one exists', async () => {
    const user = rand('u');
    const headers = { 'idempotency-key': rand('idem-') };
    const body = { user_id: user, context: { trip: 'LIS' } };
    const first = await call<Session>(server.url, 'POST', '/v1/sessions', {
      token: server.keyA,
      headers,
      body,
    });
    const second = await call<Session>(server.url, 'POST', '/v1/sessions', {
      token: server.keyA,
      headers,
      body,
    });
    expect(second.body.id).toBe(first.body.id);
    const list = await server.store.listSessions({ tenant_id: server.tenantA, user_id: user });
    expect(list.items).toHaveLength(1);
  });

  it('a refused request does not use up its key: fixing the body with the same key works', async () => {
    const session = await newSession();
    const path = `/v1/sessions/${session.id}/messages`;
    const headers = { 'idempotency-key': rand('idem-') };
    const token = server.tokens.alice;
    const bad = await call(server.url, 'POST', path, { token, headers, body: { messages: [] } });
    expect(bad.status).toBe(400);
    const good = await call(server.url, 'POST', path, {
      token,
      headers,
      body: { messages: [{ role: 'user', content: 'ok' }] },
    });
    expect(good.status).toBe(201);
  });

  it('concurrent requests with one key: one runs, the other gets the same answer or a 409, never a second append', async () => {
    const session = await newSession();
    const path = `/v1/sessions/${session.id}/messages`;
    const headers = { 'idempotency-key': rand('idem-') };
    const body = { messages: [{ role: 'user', content: 'once' }] };
    const replies = await Promise.all(
      [1, 2, 3, 4].map(() => call(server.url, 'POST', path, { token: server.tokens.alice, headers, body })),
    );
    for (const reply of replies) expect([201, 409]).toContain(reply.status);
    const stored = await server.store.listMessages(
      { tenant_id: server.tenantA, user_id: server.alice },
      session.id,
    );
    expect(stored).toHaveLength(1);
  });
});

describe('If-Match', () => {
  it('a stale version answers 409 with the current version and changes nothing', async () => {
    const session = await newSession();
    const token = server.tokens.alice;
    const path = `/v1/sessions/${session.id}`;
    const first = await call<Session>(server.url, 'PATCH', path, {
      token,
      headers: { 'if-match': `"${session.version}"` },
      body: { context: { step: 1 } },
    });
    expect(first.status).toBe(200);
    expect(first.body.version).toBe(session.version + 1);
    expect(first.headers.get('etag')).toBe(`"${session.version + 1}"`);
    const stale = await call(server.url, 'PATCH', path, {
      token,
      headers: { 'if-match': `"${session.version}"` },
      body: { context: { step: 'lost update' } },
    });
    expect(stale.status).toBe(409);
    expect(stale.body.error.code).toBe('version_conflict');
    expect(stale.body.error.details?.current_version).toBe(session.version + 1);
    const now = await call<Session>(server.url, 'GET', path, { token });
    expect(now.body.context).toEqual({ step: 1 });
  });

  it('two writers with the same version: exactly one wins', async () => {
    const session = await newSession();
    const replies = await Promise.all(
      ['a', 'b', 'c'].map((who) =>
        call(server.url, 'PATCH', `/v1/sessions/${session.id}`, {
          token: server.tokens.alice,
          headers: { 'if-match': String(session.version) },
          body: { context: { who } },
        }),
      ),
    );
    expect(replies.map((r) => r.status).sort()).toEqual([200, 409, 409]);
  });

  it('tasks: a stale If-Match answers 409', async () => {
    const scope = { tenant_id: server.tenantA, user_id: server.alice };
    const task = await server.store.createTask(scope, { type: 'demo' });
    const path = `/v1/tasks/${task.id}`;
    const token = server.tokens.alice;
    const ok = await call(server.url, 'PATCH', path, {
      token,
      headers: { 'if-match': '1' },
      body: { state: 'COLLECTING' },
    });
    expect(ok.status).toBe(200);
    const stale = await call(server.url, 'PATCH', path, {
      token,
      headers: { 'if-match': '1' },
      body: { status_line: 'x' },
    });
    expect(stale.status).toBe(409);
    expect(stale.body.error.details?.current_version).toBe(2);
    const events = await call<{ items: { to_state: string }[] }>(server.url, 'GET', `${path}/events`, {
      token,
    });
    expect(events.body.items.map((e) => e.to_state)).toContain('COLLECTING');
  });
});
