/**
 * Fork, rewind and branches over HTTP (real loopback), on the in-process memory store and a SQLite file:
 * a fork reads the prefix and then only its own messages; a rewind continues the session after a message and
 * keeps what came after as a branch; bad input is a 400 naming the field and stores nothing; a session of
 * another user or tenant is a 404 and is left as it was. The typed client makes the same calls.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/index.js';
import { newId } from '../../src/core/ids.js';
import type { Message, Session } from '../../src/core/model.js';
import { openStore } from '../../src/store/open.js';
import type { StateStore } from '../../src/store/types.js';
import { call, rand, startTestServer, type TestServer } from './harness.js';

const dataDir = mkdtempSync(join(tmpdir(), 'agentstate-branches-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

const STORES = [
  { name: 'memory', url: () => 'memory:' },
  { name: 'sqlite file', url: () => `sqlite:${join(dataDir, `${rand('branches-')}.db`)}` },
];

interface Page<T> {
  items: T[];
  next_cursor: string | null;
}

describe.each(STORES)('fork, rewind and branches over HTTP ($name)', (kind) => {
  let store: StateStore;
  let server: TestServer;
  beforeAll(async () => {
    store = await openStore(kind.url());
    server = await startTestServer({ store });
  }, 30_000);
  afterAll(async () => {
    await server?.close();
    await store?.close();
  }, 30_000);

  const scope = () => ({ tenant_id: server.tenantA, user_id: server.alice });
  const alice = () => ({ token: server.tokens.alice });

  /** A session of alice's with messages m1..mN. */
  async function sessionWith(n: number): Promise<Session> {
    const session = await store.createSession(scope(), { context: { marker: rand('secret-') } });
    await store.appendMessages(
      scope(),
      session.id,
      Array.from({ length: n }, (_, i) => ({
        role: i % 2 === 0 ? ('user' as const) : ('assistant' as const),
        content: `m${i + 1}`,
      })),
    );
    return (await store.getSession(scope(), session.id)) as Session;
  }

  async function contents(id: string, token = server.tokens.alice): Promise<string[]> {
    const page = await call<Page<Message>>(server.url, 'GET', `/v1/sessions/${id}/messages?limit=1000`, {
      token,
    });
    expect(page.status).toBe(200);
    return page.body.items.map((m) => m.content);
  }

  async function seqs(id: string): Promise<number[]> {
    const page = await call<Page<Message>>(
      server.url,
      'GET',
      `/v1/sessions/${id}/messages?limit=1000`,
      alice(),
    );
    return page.body.items.map((m) => m.seq);
  }

  /** What a refused call must leave as it was: the session, its messages, its branches, the user's sessions. */
  async function snapshot(id: string) {
    const session = await store.getSession(scope(), id);
    return {
      session: session ? [session.version, session.status, session.history ?? null] : null,
      messages: (await store.listMessages(scope(), id, { limit: 1000 })).map((m) => m.content),
      branches: (await store.listBranches(scope(), id)).items.map((s) => s.id),
      sessions: (await store.listSessions(scope(), { limit: 500 })).items.length,
    };
  }

  it('a fork at a seq answers 201 with forked_from, reads the prefix, then only its own messages', async () => {
    const original = await sessionWith(5);
    const reply = await call<Session>(server.url, 'POST', `/v1/sessions/${original.id}/fork`, {
      ...alice(),
      body: { at_seq: 3 },
    });
    expect(reply.status).toBe(201);
    const fork = reply.body;
    expect(fork.id).not.toBe(original.id);
    expect(fork.user_id).toBe(server.alice);
    expect(fork.tenant_id).toBe(server.tenantA);
    expect(fork.forked_from).toEqual({ session_id: original.id, seq: 3, checkpoint_id: null });
    expect(reply.headers.get('etag')).toBe(`"${fork.version}"`);
    expect(fork.ttl_seconds).toBe(original.ttl_seconds);

    expect(await contents(fork.id)).toEqual(['m1', 'm2', 'm3']);
    const appended = await call<{ items: Message[] }>(
      server.url,
      'POST',
      `/v1/sessions/${fork.id}/messages`,
      {
        ...alice(),
        body: { messages: [{ role: 'user', content: 'fork-own-1' }] },
      },
    );
    expect(appended.status).toBe(201);
    expect(appended.body.items.map((m) => m.seq)).toEqual([4]);
    await store.appendMessages(scope(), original.id, [{ role: 'user', content: 'original-after-fork' }]);
    expect(await contents(fork.id)).toEqual(['m1', 'm2', 'm3', 'fork-own-1']);
    expect(await seqs(fork.id)).toEqual([1, 2, 3, 4]);
    expect(await contents(original.id)).toEqual(['m1', 'm2', 'm3', 'm4', 'm5', 'original-after-fork']);
    // Paging a fork crosses from the inherited prefix to its own messages.
    const page = await call<Page<Message>>(
      server.url,
      'GET',
      `/v1/sessions/${fork.id}/messages?after_seq=2&limit=1`,
      alice(),
    );
    expect(page.body.items.map((m) => m.content)).toEqual(['m3']);
    const next = await call<Page<Message>>(
      server.url,
      'GET',
      `/v1/sessions/${fork.id}/messages?limit=1&cursor=${page.body.next_cursor}`,
      alice(),
    );
    expect(next.body.items.map((m) => m.content)).toEqual(['fork-own-1']);

    const read = await call<Session>(server.url, 'GET', `/v1/sessions/${fork.id}`, alice());
    expect(read.body.forked_from).toEqual(fork.forked_from);
    const branches = await call<{ items: Session[] }>(
      server.url,
      'GET',
      `/v1/sessions/${original.id}/branches`,
      alice(),
    );
    expect(branches.status).toBe(200);
    expect(branches.body.items.map((s) => s.id)).toEqual([fork.id]);
    const none = await call<{ items: Session[] }>(
      server.url,
      'GET',
      `/v1/sessions/${fork.id}/branches`,
      alice(),
    );
    expect(none.body.items).toEqual([]);
  });

  it('a fork at 0 has no message; a fork of a fork reads both prefixes; id and ttl_seconds are taken', async () => {
    const original = await sessionWith(4);
    const empty = await call<Session>(server.url, 'POST', `/v1/sessions/${original.id}/fork`, {
      ...alice(),
      body: { at_seq: 0 },
    });
    expect(empty.status).toBe(201);
    expect(await contents(empty.body.id)).toEqual([]);

    const first = await call<Session>(server.url, 'POST', `/v1/sessions/${original.id}/fork`, {
      ...alice(),
      body: { at_seq: 2 },
    });
    await store.appendMessages(scope(), first.body.id, [{ role: 'user', content: 'f1' }]);
    const id = newId('session');
    const second = await call<Session>(server.url, 'POST', `/v1/sessions/${first.body.id}/fork`, {
      ...alice(),
      body: { at_seq: 3, id, ttl_seconds: 120 },
    });
    expect(second.status).toBe(201);
    expect(second.body.id).toBe(id);
    expect(second.body.ttl_seconds).toBe(120);
    expect(second.body.forked_from).toMatchObject({ session_id: first.body.id, seq: 3 });
    await store.appendMessages(scope(), id, [{ role: 'user', content: 'f2' }]);
    expect(await contents(id)).toEqual(['m1', 'm2', 'f1', 'f2']);
    expect(await contents(first.body.id)).toEqual(['m1', 'm2', 'f1']);
    // The same id again: a conflict, never a 500.
    const again = await call(server.url, 'POST', `/v1/sessions/${first.body.id}/fork`, {
      ...alice(),
      body: { at_seq: 1, id },
    });
    expect({ status: again.status, code: again.body.error.code }).toEqual({ status: 409, code: 'conflict' });
  });

  it('a fork at a checkpoint starts at the messages written before it', async () => {
    const original = await sessionWith(2);
    const checkpoint = await store.putCheckpoint(scope(), {
      run_id: rand('run_'),
      session_id: original.id,
      step: 0,
      channels: { note: 'after two messages' },
    });
    // The store places a checkpoint among the messages by time (at or before it, to the millisecond): m3
    // comes a clock tick later, as a turn's next message would.
    await new Promise((resolve) => setTimeout(resolve, 5));
    await store.appendMessages(scope(), original.id, [{ role: 'user', content: 'm3' }]);
    const reply = await call<Session>(server.url, 'POST', `/v1/sessions/${original.id}/fork`, {
      ...alice(),
      body: { checkpoint_id: checkpoint.id },
    });
    expect(reply.status).toBe(201);
    expect(reply.body.forked_from).toEqual({ session_id: original.id, seq: 2, checkpoint_id: checkpoint.id });
    expect(await contents(reply.body.id)).toEqual(['m1', 'm2']);
  });

  it('a rewind answers the session and its branch; the session continues, the branch keeps what came after', async () => {
    const session = await sessionWith(4);
    const reply = await call<{ session: Session; branch: Session }>(
      server.url,
      'POST',
      `/v1/sessions/${session.id}/rewind`,
      { ...alice(), body: { at_seq: 2, expected_version: session.version } },
    );
    expect(reply.status).toBe(200);
    const { session: rewound, branch } = reply.body;
    expect(rewound.id).toBe(session.id);
    expect(rewound.version).toBeGreaterThan(session.version);
    expect(reply.headers.get('etag')).toBe(`"${rewound.version}"`);
    expect(branch.id).not.toBe(session.id);
    expect(branch.status).toBe('paused');
    expect(branch.forked_from).toMatchObject({ session_id: session.id, seq: 4 });
    expect(await contents(session.id)).toEqual(['m1', 'm2']);
    expect(await contents(branch.id)).toEqual(['m1', 'm2', 'm3', 'm4']);

    const appended = await call<{ items: Message[] }>(
      server.url,
      'POST',
      `/v1/sessions/${session.id}/messages`,
      {
        ...alice(),
        body: { messages: [{ role: 'user', content: 'again' }] },
      },
    );
    expect(appended.body.items.map((m) => m.seq)).toEqual([3]);
    expect(await contents(session.id)).toEqual(['m1', 'm2', 'again']);
    expect(await contents(branch.id)).toEqual(['m1', 'm2', 'm3', 'm4']);
    const branches = await call<{ items: Session[] }>(
      server.url,
      'GET',
      `/v1/sessions/${session.id}/branches`,
      alice(),
    );
    expect(branches.body.items.map((s) => s.id)).toEqual([branch.id]);

    // A version the session no longer has: 409, and nothing changes.
    const before = await snapshot(session.id);
    const stale = await call(server.url, 'POST', `/v1/sessions/${session.id}/rewind`, {
      ...alice(),
      body: { at_seq: 1, expected_version: session.version },
    });
    expect(stale.status).toBe(409);
    expect(stale.body.error.code).toBe('version_conflict');
    expect(await snapshot(session.id)).toEqual(before);
  });

  it('an ended session is forked but not rewound', async () => {
    const session = await sessionWith(2);
    await store.endSession(scope(), session.id);
    const fork = await call<Session>(server.url, 'POST', `/v1/sessions/${session.id}/fork`, {
      ...alice(),
      body: { at_seq: 2 },
    });
    expect(fork.status).toBe(201);
    expect(await contents(fork.body.id)).toEqual(['m1', 'm2']);
    const before = await snapshot(session.id);
    const rewind = await call(server.url, 'POST', `/v1/sessions/${session.id}/rewind`, {
      ...alice(),
      body: { at_seq: 1 },
    });
    expect(rewind.status).toBe(400);
    expect(rewind.body.error.code).toBe('invalid_request');
    expect(await snapshot(session.id)).toEqual(before);
  });

  const BAD: { name: string; path: 'fork' | 'rewind'; body?: unknown; raw?: string; names: string }[] = [
    { name: 'fork without a point', path: 'fork', body: {}, names: 'at_seq' },
    { name: 'fork with no body', path: 'fork', names: 'body' },
    {
      name: 'fork at a seq and a checkpoint',
      path: 'fork',
      body: { at_seq: 1, checkpoint_id: 'ckpt_aaaaaaaaaaaaaaaaaaaaaaaaaa' },
      names: 'checkpoint_id',
    },
    { name: 'fork at a negative seq', path: 'fork', body: { at_seq: -1 }, names: 'at_seq' },
    { name: 'fork at a fractional seq', path: 'fork', body: { at_seq: 1.5 }, names: 'at_seq' },
    { name: 'fork at a seq given as text', path: 'fork', body: { at_seq: '2' }, names: 'at_seq' },
    { name: 'fork after the last message', path: 'fork', body: { at_seq: 99 }, names: 'at_seq' },
    {
      name: 'fork at a malformed checkpoint id',
      path: 'fork',
      body: { checkpoint_id: 'nope' },
      names: 'checkpoint_id',
    },
    { name: 'fork with a malformed id', path: 'fork', body: { at_seq: 1, id: 'sess_1' }, names: 'id' },
    { name: 'fork with a TTL of 0', path: 'fork', body: { at_seq: 1, ttl_seconds: 0 }, names: 'ttl_seconds' },
    { name: 'fork with an unknown field', path: 'fork', body: { at_seq: 1, user_id: 'x' }, names: 'user_id' },
    { name: 'fork with malformed JSON', path: 'fork', raw: '{"at_seq": ', names: 'JSON' },
    { name: 'rewind without at_seq', path: 'rewind', body: {}, names: 'at_seq' },
    { name: 'rewind at a negative seq', path: 'rewind', body: { at_seq: -2 }, names: 'at_seq' },
    { name: 'rewind after the last message', path: 'rewind', body: { at_seq: 99 }, names: 'at_seq' },
    { name: 'rewind at the last message', path: 'rewind', body: { at_seq: 3 }, names: 'at_seq' },
    {
      name: 'rewind with a checkpoint',
      path: 'rewind',
      body: { at_seq: 1, checkpoint_id: 'ckpt_aaaaaaaaaaaaaaaaaaaaaaaaaa' },
      names: 'checkpoint_id',
    },
    {
      name: 'rewind with a text version',
      path: 'rewind',
      body: { at_seq: 1, expected_version: '1' },
      names: 'expected_version',
    },
  ];

  it.each(BAD)('400 naming the field, and nothing stored: $name', async (bad) => {
    const session = await sessionWith(3);
    const before = await snapshot(session.id);
    const reply = await call(server.url, 'POST', `/v1/sessions/${session.id}/${bad.path}`, {
      ...alice(),
      ...(bad.raw !== undefined ? { raw: bad.raw } : bad.body !== undefined ? { body: bad.body } : {}),
    });
    expect({ status: reply.status, code: reply.body.error.code }).toEqual({
      status: 400,
      code: 'invalid_request',
    });
    expect(reply.body.error.message).toContain(bad.names);
    expect(await snapshot(session.id)).toEqual(before);
  });

  it('a checkpoint of another session is refused, and nothing stored', async () => {
    const session = await sessionWith(2);
    const other = await sessionWith(2);
    const checkpoint = await store.putCheckpoint(scope(), {
      run_id: rand('run_'),
      session_id: other.id,
      step: 0,
      channels: {},
    });
    const before = await snapshot(session.id);
    const reply = await call(server.url, 'POST', `/v1/sessions/${session.id}/fork`, {
      ...alice(),
      body: { checkpoint_id: checkpoint.id },
    });
    expect(reply.status).toBe(400);
    expect(reply.body.error.message).toContain('checkpoint_id');
    expect(await snapshot(session.id)).toEqual(before);
  });

  it('a session of another user or tenant is a 404 that reveals nothing, and is left as it was', async () => {
    const session = await sessionWith(3);
    const marker = String(session.context.marker);
    const before = await snapshot(session.id);
    const calls = [
      { method: 'POST', path: `/v1/sessions/${session.id}/fork`, body: { at_seq: 1 } },
      { method: 'POST', path: `/v1/sessions/${session.id}/rewind`, body: { at_seq: 1 } },
      { method: 'GET', path: `/v1/sessions/${session.id}/branches` },
    ];
    for (const token of [server.tokens.bob, server.keyB, server.tokens.carol]) {
      for (const c of calls) {
        const reply = await call(server.url, c.method, c.path, {
          token,
          ...(c.body ? { body: c.body } : {}),
        });
        expect({ path: c.path, status: reply.status }).toEqual({ path: c.path, status: 404 });
        expect(reply.body.error.code).toBe('not_found');
        expect(reply.text).not.toContain(marker);
      }
    }
    for (const token of [null, server.tokens.expired, server.tokens.forged]) {
      for (const c of calls) {
        const reply = await call(server.url, c.method, c.path, {
          token,
          ...(c.body ? { body: c.body } : {}),
        });
        expect(reply.status).toBe(401);
      }
    }
    expect(await snapshot(session.id)).toEqual(before);
    // Bob's own sessions gained no fork.
    expect((await store.listSessions({ tenant_id: server.tenantA, user_id: server.bob })).items).toEqual([]);
    // A session id that exists nowhere is the same 404.
    const missing = await call(server.url, 'POST', `/v1/sessions/${newId('session')}/fork`, {
      ...alice(),
      body: { at_seq: 0 },
    });
    expect(missing.status).toBe(404);
  });

  it("the tenant key forks any of its users' sessions; the fork belongs to that user", async () => {
    const session = await sessionWith(2);
    const reply = await call<Session>(server.url, 'POST', `/v1/sessions/${session.id}/fork`, {
      token: server.keyA,
      body: { at_seq: 1 },
    });
    expect(reply.status).toBe(201);
    expect(reply.body.user_id).toBe(server.alice);
    expect(await contents(reply.body.id)).toEqual(['m1']);
    const listed = await call<{ items: Session[] }>(
      server.url,
      'GET',
      `/v1/sessions/${session.id}/branches`,
      {
        token: server.keyA,
      },
    );
    expect(listed.body.items.map((s) => s.id)).toEqual([reply.body.id]);
  });

  it('a fork sent again with its Idempotency-Key answers the same fork and makes no other', async () => {
    const session = await sessionWith(2);
    const send = () =>
      call<Session>(server.url, 'POST', `/v1/sessions/${session.id}/fork`, {
        ...alice(),
        headers: { 'idempotency-key': rand('fork-key-') },
        body: { at_seq: 1 },
      });
    const key = rand('fork-key-');
    const again = () =>
      call<Session>(server.url, 'POST', `/v1/sessions/${session.id}/fork`, {
        ...alice(),
        headers: { 'idempotency-key': key },
        body: { at_seq: 2 },
      });
    const first = await again();
    const second = await again();
    expect(first.status).toBe(201);
    expect(second.status).toBe(201);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(second.body.id).toBe(first.body.id);
    const other = await send();
    expect(other.body.id).not.toBe(first.body.id);
    expect((await store.listBranches(scope(), session.id)).items.map((s) => s.id)).toEqual([
      first.body.id,
      other.body.id,
    ]);
  });

  it('the typed client forks, rewinds and lists branches; its errors carry the code', async () => {
    const client = createClient({ baseUrl: server.url, token: server.tokens.alice });
    const session = await sessionWith(3);
    const fork = await client.sessions.fork(session.id, { at_seq: 2 });
    expect(fork.forked_from).toEqual({ session_id: session.id, seq: 2, checkpoint_id: null });
    const { session: rewound, branch } = await client.sessions.rewind(session.id, { at_seq: 1 });
    expect(rewound.id).toBe(session.id);
    const branches = await client.sessions.branches(session.id);
    expect(branches.items.map((s) => s.id)).toEqual([fork.id, branch.id]);
    await expect(client.sessions.fork(session.id, {})).rejects.toMatchObject({
      status: 400,
      code: 'invalid_request',
    });
    const asBob = createClient({ baseUrl: server.url, token: server.tokens.bob });
    await expect(asBob.sessions.branches(session.id)).rejects.toMatchObject({
      status: 404,
      code: 'not_found',
    });
  });
});

describe('the OpenAPI document', () => {
  it('describes fork, rewind and branches with their errors', async () => {
    const server = await startTestServer();
    try {
      const doc = await call<{
        paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
      }>(server.url, 'GET', '/openapi.json');
      const { paths } = doc.body;
      for (const [path, method, ok] of [
        ['/v1/sessions/{id}/fork', 'post', '201'],
        ['/v1/sessions/{id}/rewind', 'post', '200'],
        ['/v1/sessions/{id}/branches', 'get', '200'],
      ] as const) {
        const responses = paths[path]?.[method]?.responses ?? {};
        expect(Object.keys(responses), `${method} ${path}`).toEqual(
          expect.arrayContaining([ok, '400', '404', '409']),
        );
      }
    } finally {
      await server.close();
    }
  });
});
