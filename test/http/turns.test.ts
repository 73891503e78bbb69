/**
 * Turns over HTTP with the real runtime (built-in agents, rules model, demo tools): a turn answers with the
 * reply, session, tasks and checkpoint; concurrent turns of one session never interleave (the loser gets
 * 409); a retried turn with the same Idempotency-Key runs once; checkpoints and resume are scoped.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LinkedRuntime, linkRuntime } from '../../src/cli/commands/runtime-link.js';
import type { Message, Session } from '../../src/core/model.js';
import type { TurnResponse } from '../../src/server/turn-runner.js';
import { openStore } from '../../src/store/open.js';
import type { StateStore } from '../../src/store/types.js';
import { call, startTestServer, type TestServer } from './harness.js';

let server: TestServer;
let store: StateStore;
let runtime: LinkedRuntime;
const dataDir = mkdtempSync(join(tmpdir(), 'agentstate-turns-'));

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

async function newSession(agent = 'flight_booking'): Promise<Session> {
  const made = await call<Session>(server.url, 'POST', '/v1/sessions', {
    token: server.tokens.alice,
    body: { agent },
  });
  expect(made.status).toBe(201);
  return made.body;
}

const turn = (id: string, input: string, headers: Record<string, string> = {}, token = server.tokens.alice) =>
  call<TurnResponse>(server.url, 'POST', `/v1/sessions/${id}/turns`, { token, body: { input }, headers });

async function messagesOf(id: string): Promise<Message[]> {
  return store.listMessages({ tenant_id: server.tenantA, user_id: server.alice }, id, { limit: 1000 });
}

describe('turns', () => {
  it("a new session shows the open tasks of the user's ended session it carries over, as its next turn takes them", async () => {
    const first = await newSession();
    const started = await turn(first.id, 'I want to book a flight from Paris to Lisbon');
    const task = started.body.tasks[0];
    expect(task?.state).toBe('COLLECTING');
    const ended = await call(server.url, 'DELETE', `/v1/sessions/${first.id}`, {
      token: server.tokens.alice,
    });
    expect(ended.status).toBe(204);
    const next = await newSession();
    type Shown = { open_tasks: { id: string; session_id?: string }[] };
    const shown = await call<Shown>(server.url, 'GET', `/v1/sessions/${next.id}`, {
      token: server.tokens.alice,
    });
    expect(shown.body.open_tasks.map((t) => t.id)).toEqual([task?.id]);
    // The tenant key sees the same; another user of the tenant sees neither session.
    const asTenant = await call<Shown>(server.url, 'GET', `/v1/sessions/${next.id}`, { token: server.keyA });
    expect(asTenant.body.open_tasks.map((t) => t.id)).toEqual([task?.id]);
    const asBob = await call(server.url, 'GET', `/v1/sessions/${next.id}`, { token: server.tokens.bob });
    expect(asBob.status).toBe(404);
    // The ended session shows none of them carried anywhere: its own task is still its own.
    const old = await call<Shown>(server.url, 'GET', `/v1/sessions/${first.id}`, {
      token: server.tokens.alice,
    });
    expect(old.body.open_tasks.map((t) => t.id)).toEqual([task?.id]);
    // The next turn takes it up, and the task is the new session's.
    const goes = await turn(next.id, 'on 2027-03-04');
    expect(goes.body.tasks[0]?.id).toBe(task?.id);
    expect(goes.body.tasks[0]?.session_id).toBe(next.id);
    // A session of another user shows nothing of it.
    const bobs = await call<Session>(server.url, 'POST', '/v1/sessions', {
      token: server.tokens.bob,
      body: { agent: 'flight_booking' },
    });
    const bobShown = await call<Shown>(server.url, 'GET', `/v1/sessions/${bobs.body.id}`, {
      token: server.tokens.bob,
    });
    expect(bobShown.body.open_tasks).toEqual([]);
  });

  it('a turn answers with the reply, the session, its tasks and a checkpoint', async () => {
    const session = await newSession();
    const reply = await turn(session.id, 'I want to book a flight from Paris to Lisbon');
    expect(reply.status).toBe(200);
    expect(reply.body.reply.length).toBeGreaterThan(0);
    expect(reply.body.session?.id).toBe(session.id);
    expect(reply.body.tasks.length).toBeGreaterThan(0);
    expect(reply.body.tasks[0]?.type).toBe('flight_booking');
    expect(reply.body.checkpoint_id).toMatch(/^ckpt_/);
    const shown = await call<{ open_tasks: { status_line: string }[] }>(
      server.url,
      'GET',
      `/v1/sessions/${session.id}`,
      {
        token: server.tokens.alice,
      },
    );
    expect(shown.body.open_tasks.length).toBeGreaterThan(0);
    const history = await call<{ items: { id: string }[] }>(
      server.url,
      'GET',
      `/v1/sessions/${session.id}/checkpoints`,
      {
        token: server.tokens.alice,
      },
    );
    expect(history.status).toBe(200);
    expect(history.body.items.map((c) => c.id)).toContain(reply.body.checkpoint_id);
    const resumed = await call<TurnResponse>(server.url, 'POST', `/v1/sessions/${session.id}/resume`, {
      token: server.tokens.alice,
      body: {},
    });
    expect(resumed.status).toBe(200);
    expect(resumed.body.reply).toBe(reply.body.reply);
    // The body of resume is optional: none at all, or an empty one sent as JSON, is the same request.
    const bodiless: Record<string, string>[] = [{}, { 'content-type': 'application/json' }];
    for (const headers of bodiless) {
      const bare = await call<TurnResponse>(server.url, 'POST', `/v1/sessions/${session.id}/resume`, {
        token: server.tokens.alice,
        headers,
      });
      expect(bare.status).toBe(200);
      expect(bare.body.reply).toBe(reply.body.reply);
    }
  });

  it('a new session must name a known agent', async () => {
    const made = await call(server.url, 'POST', '/v1/sessions', {
      token: server.tokens.alice,
      body: { agent: 'nope' },
    });
    expect(made.status).toBe(400);
    expect(made.body.error.message).toContain('flight_booking');
  });

  it("the session's context is what its agent's model call would see: instructions, open tasks, missing slots", async () => {
    const session = await newSession();
    expect((await turn(session.id, 'book a flight from Beijing to Shanghai on 2027-01-15')).status).toBe(200);
    const context = await call<{ system: string; messages: { role: string; content: string }[] }>(
      server.url,
      'GET',
      `/v1/sessions/${session.id}/context`,
      { token: server.tokens.alice },
    );
    expect(context.status).toBe(200);
    const agent = runtime.setup.agents.get('flight_booking');
    expect(context.body.system).toContain(agent?.description ?? 'no agent');
    expect(context.body.system).toMatch(/Slots missing: .*cabin_class/);
    expect(context.body.system).not.toMatch(/Slots missing: none/);
    expect(context.body.messages.map((m) => m.role)).toEqual(['user', 'assistant']);
  });

  it('a session cannot be changed to name an unknown agent, and the refusal changes nothing', async () => {
    const session = await newSession();
    const patched = await call(server.url, 'PATCH', `/v1/sessions/${session.id}`, {
      token: server.tokens.alice,
      headers: { 'if-match': String(session.version) },
      body: { agent: 'nope' },
    });
    expect(patched.status).toBe(400);
    expect(patched.body.error).toMatchObject({ code: 'invalid_request', details: { field: 'agent' } });
    expect(patched.body.error.message).toContain('no agent named "nope"; known: ');
    const after = await store.getSession({ tenant_id: server.tenantA, user_id: server.alice }, session.id);
    expect(after).toMatchObject({ agent: 'flight_booking', version: session.version });
    const known = await call(server.url, 'PATCH', `/v1/sessions/${session.id}`, {
      token: server.tokens.alice,
      headers: { 'if-match': String(session.version) },
      body: { agent: 'flight_booking', context: { seat: 'aisle' } },
    });
    expect(known.status).toBe(200);
  });

  it('another user or tenant gets 404 for turns, checkpoints and resume, and nothing runs', async () => {
    const session = await newSession();
    for (const token of [server.tokens.bob, server.keyB, server.tokens.carol]) {
      expect((await turn(session.id, 'book a flight', {}, token)).status).toBe(404);
      const cp = await call(server.url, 'GET', `/v1/sessions/${session.id}/checkpoints`, { token });
      expect(cp.status).toBe(404);
      const rs = await call(server.url, 'POST', `/v1/sessions/${session.id}/resume`, { token, body: {} });
      expect(rs.status).toBe(404);
    }
    expect(await messagesOf(session.id)).toEqual([]);
    const nothing = await call(server.url, 'POST', `/v1/sessions/${session.id}/resume`, {
      token: server.tokens.alice,
      body: {},
    });
    expect(nothing.status).toBe(409);
  });

  it('concurrent turns of one session never interleave: each answer is 200 or 409, messages stay in pairs', async () => {
    const session = await newSession();
    const inputs = ['book a flight to Lisbon', 'from Paris', 'tomorrow', 'economy', 'Ada Lovelace'];
    const replies = await Promise.all(inputs.map((input) => turn(session.id, input)));
    const statuses = replies.map((r) => r.status);
    for (const status of statuses) expect([200, 409]).toContain(status);
    const ok = statuses.filter((s) => s === 200).length;
    expect(ok).toBeGreaterThan(0);
    for (const r of replies.filter((x) => x.status === 409)) {
      expect((r.body as unknown as { error: { code: string } }).error.code).toBe('conflict');
    }
    const messages = await messagesOf(session.id);
    expect(messages.map((m) => m.seq)).toEqual(messages.map((_, i) => i + 1));
    const roles = messages.filter((m) => m.role === 'user' || m.role === 'assistant').map((m) => m.role);
    expect(roles.filter((r) => r === 'user')).toHaveLength(ok);
    for (let i = 0; i < roles.length; i += 2) expect(roles.slice(i, i + 2)).toEqual(['user', 'assistant']);
  });

  it('a retried turn with the same Idempotency-Key runs once and returns the first answer', async () => {
    const session = await newSession();
    const headers = { 'idempotency-key': `turn-${session.id}` };
    const first = await turn(session.id, 'book a flight to Lisbon', headers);
    const again = await turn(session.id, 'book a flight to Lisbon', headers);
    expect([first.status, again.status]).toEqual([200, 200]);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    const users = (await messagesOf(session.id)).filter((m) => m.role === 'user');
    expect(users).toHaveLength(1);
  });
});
