import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Session } from '../../src/core/model.js';
import { DEFAULT_WAITING_TTL_SECONDS } from '../../src/lifecycle/session-policy.js';
import { DEFAULT_SESSION_TTL_SECONDS } from '../../src/store/types.js';
import { call, startTestServer, type TestServer } from './harness.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => server.close());

async function patch(id: string, version: number, body: Record<string, unknown>) {
  return call<Session>(server.url, 'PATCH', `/v1/sessions/${id}`, {
    token: server.tokens.alice,
    headers: { 'if-match': String(version) },
    body,
  });
}

describe('PATCH /v1/sessions/{id}: the TTL follows the status', () => {
  it('a session waiting for the user waits longer, and gets the default TTL back when active again', async () => {
    const made = await call<Session>(server.url, 'POST', '/v1/sessions', {
      token: server.tokens.alice,
      body: {},
    });
    expect(made.body.ttl_seconds).toBe(DEFAULT_SESSION_TTL_SECONDS);
    const waiting = await patch(made.body.id, made.body.version, { status: 'waiting_for_user' });
    expect(waiting.status).toBe(200);
    expect(waiting.body.ttl_seconds).toBe(DEFAULT_WAITING_TTL_SECONDS);
    const waitMs = Date.parse(waiting.body.expires_at) - Date.parse(waiting.body.updated_at);
    expect(waitMs).toBe(DEFAULT_WAITING_TTL_SECONDS * 1000);
    const active = await patch(made.body.id, waiting.body.version, { status: 'active' });
    expect(active.body.ttl_seconds).toBe(DEFAULT_SESSION_TTL_SECONDS);
  });

  it('an explicit ttl_seconds in the same patch wins over the policy', async () => {
    const made = await call<Session>(server.url, 'POST', '/v1/sessions', {
      token: server.tokens.alice,
      body: {},
    });
    const waiting = await patch(made.body.id, made.body.version, {
      status: 'waiting_for_user',
      ttl_seconds: 600,
    });
    expect(waiting.body.ttl_seconds).toBe(600);
  });
});
