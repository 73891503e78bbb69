/**
 * MCP over Streamable HTTP at /mcp of a real server on loopback, with the SDK's own client: the REST API's
 * tenant keys and user tokens, each seeing only what it sees over REST; tools over sessions, messages, open
 * tasks and actions; the session context resource; bad input answered as tool errors.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MemoryItem, Session } from '../../src/core/model.js';
import { call as rest, startTestServer, type TestServer } from '../http/harness.js';
import { connectHttp, ok, refused, resourceText } from './helpers.js';

let server: TestServer;
const clients: Client[] = [];

async function as(token: string | null): Promise<Client> {
  const client = await connectHttp(server.url, token);
  clients.push(client);
  return client;
}

beforeAll(async () => {
  server = await startTestServer();
});

afterAll(async () => {
  for (const client of clients) await client.close();
  await server.close();
});

describe('credentials', () => {
  it('refuses a request without a token, with a forged one and with an expired one', async () => {
    for (const token of [null, server.tokens.forged, server.tokens.expired]) {
      await expect(connectHttp(server.url, token)).rejects.toThrow(/401|unauthorized/i);
    }
  });

  it('lists the tools and the context resource template', async () => {
    const client = await as(server.tokens.alice);
    const tools = (await client.listTools()).tools.map((t) => t.name).sort();
    expect(tools).toEqual([
      'actions_attention',
      'memory_delete',
      'memory_get',
      'memory_put',
      'memory_search',
      'messages_list',
      'session_get',
      'sessions_list',
      'tasks_open',
    ]);
    const templates = (await client.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate);
    expect(templates).toContain('agentstate://sessions/{session_id}/context');
    expect(client.getServerVersion()?.name).toBe('agentstate');
  });

  it("keeps a user token out of another user's memory", async () => {
    const alice = await as(server.tokens.alice);
    const bob = await as(server.tokens.bob);
    const put = await ok<{ item: MemoryItem }>(alice, 'memory_put', {
      namespace: 'preferences',
      key: 'seat',
      value: { side: 'aisle' },
    });
    expect(put.item).toMatchObject({
      tenant_id: server.tenantA,
      user_id: server.alice,
      value: { side: 'aisle' },
    });

    // Bob's own memory has no such item; naming Alice is refused without a word about her.
    expect(await ok(bob, 'memory_get', { namespace: 'preferences', key: 'seat' })).toEqual({ item: null });
    for (const [tool, args] of [
      ['memory_get', { namespace: 'preferences', key: 'seat' }],
      ['memory_search', { namespace: 'preferences' }],
      ['memory_delete', { namespace: 'preferences', key: 'seat' }],
      ['memory_put', { namespace: 'preferences', key: 'seat', value: 'window' }],
    ] as const) {
      const text = await refused(bob, tool, { ...args, user_id: server.alice });
      expect(text).toMatch(/^invalid_request: user_id differs from the user of this credential/);
      expect(text).not.toContain('aisle');
    }
    expect(await ok(bob, 'memory_search', { namespace: 'preferences' })).toEqual({
      items: [],
      next_cursor: null,
    });

    // Nothing Bob tried changed Alice's item; REST sees it exactly as MCP wrote it.
    const seen = await rest<MemoryItem>(
      server.url,
      'GET',
      `/v1/users/${server.alice}/memory/preferences/seat`,
      {
        token: server.tokens.alice,
      },
    );
    expect(seen.status).toBe(200);
    expect(seen.body.value).toEqual({ side: 'aisle' });
  });

  it("lets a tenant key reach any user's memory of its tenant only, naming the user", async () => {
    const keyA = await as(server.keyA);
    const keyB = await as(server.keyB);
    const carol = await as(server.tokens.carol);
    await ok(keyA, 'memory_put', { namespace: 'facts', key: 'home', value: 'BJS', user_id: server.bob });
    expect(await refused(keyA, 'memory_get', { namespace: 'facts', key: 'home' })).toMatch(
      /^invalid_request: user_id: required/,
    );
    const got = await ok<{ item: MemoryItem }>(keyA, 'memory_get', {
      namespace: 'facts',
      key: 'home',
      user_id: server.bob,
    });
    expect(got.item.value).toBe('BJS');
    // Another tenant, by key or by one of its users' tokens, finds nothing under the same user id.
    expect(await ok(keyB, 'memory_get', { namespace: 'facts', key: 'home', user_id: server.bob })).toEqual({
      item: null,
    });
    expect(await ok(carol, 'memory_search', { namespace: 'facts' })).toEqual({
      items: [],
      next_cursor: null,
    });
  });

  it("does not show a user another user's sessions, messages or context", async () => {
    const session = await server.store.createSession(
      { tenant_id: server.tenantA, user_id: server.alice },
      { agent: 'concierge' },
    );
    await server.store.appendMessages({ tenant_id: server.tenantA }, session.id, [
      { role: 'user', content: 'a secret of alice' },
    ]);
    const bob = await as(server.tokens.bob);
    expect(await refused(bob, 'session_get', { session_id: session.id })).toMatch(/^not_found: session /);
    expect(await refused(bob, 'messages_list', { session_id: session.id })).toMatch(/^not_found: session /);
    const listed = await ok<{ items: Session[] }>(bob, 'sessions_list', {});
    expect(listed.items.map((s) => s.id)).not.toContain(session.id);
    await expect(bob.readResource({ uri: `agentstate://sessions/${session.id}/context` })).rejects.toThrow(
      /-32002.*not_found: session/,
    );
    const alice = await as(server.tokens.alice);
    const read = await alice.readResource({ uri: `agentstate://sessions/${session.id}/context` });
    expect(JSON.parse(resourceText(read)).messages).toEqual([{ role: 'user', content: 'a secret of alice' }]);
  });
});

describe('tools', () => {
  it('searches memory by namespace and key prefix, page by page, and deletes', async () => {
    const alice = await as(server.tokens.alice);
    for (const key of ['trip:1', 'trip:2', 'trip:3', 'home']) {
      await ok(alice, 'memory_put', { namespace: 'notes', key, value: key.length });
    }
    const first = await ok<{ items: MemoryItem[]; next_cursor: string | null }>(alice, 'memory_search', {
      namespace: 'notes',
      prefix: 'trip:',
      limit: 2,
    });
    expect(first.items.map((i) => i.key)).toEqual(['trip:1', 'trip:2']);
    expect(first.next_cursor).not.toBeNull();
    const second = await ok<{ items: MemoryItem[]; next_cursor: string | null }>(alice, 'memory_search', {
      namespace: 'notes',
      prefix: 'trip:',
      limit: 2,
      cursor: first.next_cursor,
    });
    expect(second.items.map((i) => i.key)).toEqual(['trip:3']);
    expect(await ok(alice, 'memory_delete', { namespace: 'notes', key: 'home' })).toEqual({ deleted: true });
    expect(await ok(alice, 'memory_delete', { namespace: 'notes', key: 'home' })).toEqual({ deleted: false });
    expect(await ok(alice, 'memory_get', { namespace: 'notes', key: 'home' })).toEqual({ item: null });
  });

  it('reads a session, its messages, open tasks with status lines and actions needing attention', async () => {
    const scope = { tenant_id: server.tenantA, user_id: server.bob };
    const { store } = server;
    const session = await store.createSession(scope, { agent: 'travel' });
    await store.appendMessages(scope, session.id, [
      { role: 'user', content: 'book me a flight' },
      { role: 'assistant', content: 'where to?' },
      { role: 'user', content: 'Shanghai' },
    ]);
    const open = await store.createTask(scope, {
      session_id: session.id,
      type: 'flight',
      state: 'COLLECTING',
      status_line: 'Booking a flight: waiting for the date',
    });
    await store.createTask(scope, {
      session_id: session.id,
      type: 'hotel',
      state: 'DONE',
      status_line: 'done',
    });
    const unsure = await store.beginAction(scope, {
      task_id: open.id,
      type: 'tool',
      tool: 'charge_card',
      params: { amount: 120 },
      idempotency_key: `charge-${session.id}`,
    });
    await store.markActionUnknown(scope, unsure.action.id, 'the card service timed out');
    const pending = await store.beginAction(scope, {
      task_id: open.id,
      type: 'tool',
      tool: 'hold_seat',
      params: {},
      idempotency_key: `hold-${session.id}`,
    });

    const bob = await as(server.tokens.bob);
    const got = await ok<{ session: Session; open_tasks: { id: string; status_line: string }[] }>(
      bob,
      'session_get',
      { session_id: session.id },
    );
    expect(got.session).toMatchObject({ id: session.id, agent: 'travel', user_id: server.bob });
    expect(got.open_tasks).toEqual([
      expect.objectContaining({
        id: open.id,
        state: 'COLLECTING',
        status_line: 'Booking a flight: waiting for the date',
      }),
    ]);

    const page = await ok<{ messages: { seq: number; content: string }[]; next_after_seq: number | null }>(
      bob,
      'messages_list',
      { session_id: session.id, limit: 2 },
    );
    expect(page.messages.map((m) => m.content)).toEqual(['book me a flight', 'where to?']);
    expect(page.next_after_seq).toBe(2);
    const rest2 = await ok<{ messages: { content: string }[]; next_after_seq: number | null }>(
      bob,
      'messages_list',
      {
        session_id: session.id,
        after_seq: 2,
        limit: 2,
      },
    );
    expect(rest2).toMatchObject({ messages: [{ content: 'Shanghai' }], next_after_seq: null });

    const tasks = await ok<{ items: { id: string; state: string; status_line: string }[] }>(
      bob,
      'tasks_open',
      {},
    );
    expect(tasks.items.map((t) => [t.id, t.state, t.status_line])).toEqual([
      [open.id, 'COLLECTING', 'Booking a flight: waiting for the date'],
    ]);

    type Attention = {
      items: { id: string; status: string; reason: string; task: { status_line: string } }[];
    };
    const fresh = await ok<Attention>(bob, 'actions_attention', {});
    expect(fresh.items.map((a) => [a.id, a.status, a.reason])).toEqual([
      [unsure.action.id, 'UNKNOWN', 'the card service timed out'],
    ]);
    expect(fresh.items[0]?.task.status_line).toBe('Booking a flight: waiting for the date');
    const stale = await ok<Attention>(bob, 'actions_attention', { pending_older_than_seconds: 0 });
    expect(stale.items.map((a) => [a.id, a.status])).toEqual([
      [unsure.action.id, 'UNKNOWN'],
      [pending.action.id, 'PENDING'],
    ]);
    // Alice, in the same tenant, sees none of it.
    const alice = await as(server.tokens.alice);
    expect(await ok(alice, 'actions_attention', { pending_older_than_seconds: 0 })).toEqual({ items: [] });
    expect((await ok<{ items: unknown[] }>(alice, 'tasks_open', {})).items).toEqual([]);
  });

  it('answers bad input as a tool error naming what is wrong, and keeps serving', async () => {
    const alice = await as(server.tokens.alice);
    const cases: [string, Record<string, unknown>, RegExp][] = [
      ['memory_put', { namespace: 'preferences', key: 'seat' }, /required \(any JSON value\) at value/],
      ['memory_put', { namespace: '_summaries:x', key: 'k', value: 1 }, /^invalid_request: .*reserved/],
      ['memory_put', { namespace: 'bad name', key: 'k', value: 1 }, /^invalid_request: memory namespace/],
      ['memory_put', { namespace: 'p', key: 'k', value: 1, ttl_seconds: 0 }, /ttl_seconds/],
      ['memory_get', { namespace: 'p', key: 'k', extra: true }, /Unrecognized key: "extra"/],
      ['memory_get', { namespace: 'p', key: 42 }, /expected string.*at key/],
      ['memory_search', { namespace: 'p', limit: 501 }, /at limit/],
      ['memory_search', { namespace: 'p', cursor: 'not-a-cursor' }, /^invalid_request: /],
      ['session_get', { session_id: 'sess_not_an_id' }, /^invalid_request: /],
      ['messages_list', { session_id: 'x', after_seq: -1 }, /at after_seq/],
      ['sessions_list', { status: 'sleeping' }, /at status/],
      ['no_such_tool', {}, /no_such_tool not found/],
    ];
    for (const [tool, args, expected] of cases) {
      expect(await refused(alice, tool, args), `${tool} ${JSON.stringify(args)}`).toMatch(expected);
    }
    await expect(
      alice.readResource({ uri: 'agentstate://sessions/sess_x/context?max_tokens=0' }),
    ).rejects.toThrow(/max_tokens must be a whole number/);
    // Nothing was written, and the connection still answers.
    expect(await ok(alice, 'memory_get', { namespace: 'preferences', key: 'k' })).toEqual({ item: null });
  });
});

describe('the endpoint', () => {
  it('is stateless: GET and DELETE answer 405, a POST carries no session id', async () => {
    for (const method of ['GET', 'DELETE']) {
      const reply = await rest(server.url, method, '/mcp', { token: server.keyA });
      expect(reply.status).toBe(405);
    }
    const response = await fetch(`${server.url}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${server.keyA}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('mcp-session-id')).toBeNull();
    const body = (await response.json()) as { result: { tools: unknown[] } };
    expect(body.result.tools).toHaveLength(9);
  });

  it('keeps an Idempotency-Key as every POST route does: the same call replays, another body is refused', async () => {
    const post = (key: string, value: string) =>
      fetch(`${server.url}/mcp`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${server.tokens.alice}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'idempotency-key': key,
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 7,
          method: 'tools/call',
          params: { name: 'memory_put', arguments: { namespace: 'idem', key: 'k', value } },
        }),
      });
    const key = `mcp-${Date.now()}`;
    const first = await post(key, 'one');
    expect(first.status).toBe(200);
    const firstBody = await first.text();
    const again = await post(key, 'one');
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await again.text()).toBe(firstBody);
    expect((await post(key, 'two')).status).toBe(409);
    const alice = await as(server.tokens.alice);
    const stored = await ok<{ item: MemoryItem }>(alice, 'memory_get', { namespace: 'idem', key: 'k' });
    expect(stored.item.value).toBe('one');
  });

  it('is not in the OpenAPI document', async () => {
    const doc = await rest<{ paths: Record<string, unknown> }>(server.url, 'GET', '/openapi.json');
    expect(Object.keys(doc.body.paths)).not.toContain('/mcp');
  });

  it('answers an unexpected store failure as an internal tool error without its text', async () => {
    const alice = await as(server.tokens.alice);
    const original = server.store.listTasks.bind(server.store);
    server.store.listTasks = async () => {
      throw new TypeError('secret driver detail');
    };
    try {
      const text = await refused(alice, 'tasks_open', {});
      expect(text).toMatch(/^internal: tool tasks_open failed unexpectedly/);
      expect(text).not.toContain('secret');
    } finally {
      server.store.listTasks = original;
    }
  });
});
