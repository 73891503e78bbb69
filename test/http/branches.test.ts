/**
 * Fork, rewind and branches over HTTP (real loopback), on the in-process memory store and a SQLite file:
 * a fork reads the prefix and then only its own messages; a rewind continues the session after a message and
 * keeps what came after as a branch; an ended session is forked but not rewound; the tenant key forks for
 * its users; a fork sent again with its Idempotency-Key is the same fork. The typed client makes the same
 * calls. What these routes refuse is in branches-refusals.test.ts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/index.js';
import { newId } from '../../src/core/ids.js';
import type { Message, Session } from '../../src/core/model.js';
import { branchStores, useBranchServer } from './branches-fixture.js';
import { call, rand, startTestServer } from './harness.js';

const dataDir = mkdtempSync(join(tmpdir(), 'agentstate-branches-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

interface Page<T> {
  items: T[];
  next_cursor: string | null;
}

describe.each(branchStores(dataDir))('fork, rewind and branches over HTTP ($name)', (kind) => {
  const t = useBranchServer(kind);
  const { scope, alice, sessionWith, contents, seqs, snapshot } = t;

  it('a fork at a seq answers 201 with forked_from, reads the prefix, then only its own messages', async () => {
    const original = await sessionWith(5);
    const reply = await call<Session>(t.server.url, 'POST', `/v1/sessions/${original.id}/fork`, {
      ...alice(),
      body: { at_seq: 3 },
    });
    expect(reply.status).toBe(201);
    const fork = reply.body;
    expect(fork.id).not.toBe(original.id);
    expect(fork.user_id).toBe(t.server.alice);
    expect(fork.tenant_id).toBe(t.server.tenantA);
    expect(fork.forked_from).toEqual({ session_id: original.id, seq: 3, checkpoint_id: null });
    expect(reply.headers.get('etag')).toBe(`"${fork.version}"`);
    expect(fork.ttl_seconds).toBe(original.ttl_seconds);

    expect(await contents(fork.id)).toEqual(['m1', 'm2', 'm3']);
    const appended = await call<{ items: Message[] }>(
      t.server.url,
      'POST',
      `/v1/sessions/${fork.id}/messages`,
      {
        ...alice(),
        body: { messages: [{ role: 'user', content: 'fork-own-1' }] },
      },
    );
    expect(appended.status).toBe(201);
    expect(appended.body.items.map((m) => m.seq)).toEqual([4]);
    await t.store.appendMessages(scope(), original.id, [{ role: 'user', content: 'original-after-fork' }]);
    expect(await contents(fork.id)).toEqual(['m1', 'm2', 'm3', 'fork-own-1']);
    expect(await seqs(fork.id)).toEqual([1, 2, 3, 4]);
    expect(await contents(original.id)).toEqual(['m1', 'm2', 'm3', 'm4', 'm5', 'original-after-fork']);
    // Paging a fork crosses from the inherited prefix to its own messages.
    const page = await call<Page<Message>>(
      t.server.url,
      'GET',
      `/v1/sessions/${fork.id}/messages?after_seq=2&limit=1`,
      alice(),
    );
    expect(page.body.items.map((m) => m.content)).toEqual(['m3']);
    const next = await call<Page<Message>>(
      t.server.url,
      'GET',
      `/v1/sessions/${fork.id}/messages?limit=1&cursor=${page.body.next_cursor}`,
      alice(),
    );
    expect(next.body.items.map((m) => m.content)).toEqual(['fork-own-1']);

    const read = await call<Session>(t.server.url, 'GET', `/v1/sessions/${fork.id}`, alice());
    expect(read.body.forked_from).toEqual(fork.forked_from);
    const branches = await call<{ items: Session[] }>(
      t.server.url,
      'GET',
      `/v1/sessions/${original.id}/branches`,
      alice(),
    );
    expect(branches.status).toBe(200);
    expect(branches.body.items.map((s) => s.id)).toEqual([fork.id]);
    const none = await call<{ items: Session[] }>(
      t.server.url,
      'GET',
      `/v1/sessions/${fork.id}/branches`,
      alice(),
    );
    expect(none.body.items).toEqual([]);
  });

  it('a fork at 0 has no message; a fork of a fork reads both prefixes; id and ttl_seconds are taken', async () => {
    const original = await sessionWith(4);
    const empty = await call<Session>(t.server.url, 'POST', `/v1/sessions/${original.id}/fork`, {
      ...alice(),
      body: { at_seq: 0 },
    });
    expect(empty.status).toBe(201);
    expect(await contents(empty.body.id)).toEqual([]);

    const first = await call<Session>(t.server.url, 'POST', `/v1/sessions/${original.id}/fork`, {
      ...alice(),
      body: { at_seq: 2 },
    });
    await t.store.appendMessages(scope(), first.body.id, [{ role: 'user', content: 'f1' }]);
    const id = newId('session');
    const second = await call<Session>(t.server.url, 'POST', `/v1/sessions/${first.body.id}/fork`, {
      ...alice(),
      body: { at_seq: 3, id, ttl_seconds: 120 },
    });
    expect(second.status).toBe(201);
    expect(second.body.id).toBe(id);
    expect(second.body.ttl_seconds).toBe(120);
    expect(second.body.forked_from).toMatchObject({ session_id: first.body.id, seq: 3 });
    await t.store.appendMessages(scope(), id, [{ role: 'user', content: 'f2' }]);
    expect(await contents(id)).toEqual(['m1', 'm2', 'f1', 'f2']);
    expect(await contents(first.body.id)).toEqual(['m1', 'm2', 'f1']);
    // The same id again: a conflict, never a 500.
    const again = await call(t.server.url, 'POST', `/v1/sessions/${first.body.id}/fork`, {
      ...alice(),
      body: { at_seq: 1, id },
    });
    expect({ status: again.status, code: again.body.error.code }).toEqual({ status: 409, code: 'conflict' });
  });

  it('a fork at a checkpoint starts at the messages written before it', async () => {
    const original = await sessionWith(2);
    const checkpoint = await t.store.putCheckpoint(scope(), {
      run_id: rand('run_'),
      session_id: original.id,
      step: 0,
      channels: { note: 'after two messages' },
    });
    // The store places a checkpoint among the messages by time (at or before it, to the millisecond): m3
    // comes a clock tick later, as a turn's next message would.
    await new Promise((resolve) => setTimeout(resolve, 5));
    await t.store.appendMessages(scope(), original.id, [{ role: 'user', content: 'm3' }]);
    const reply = await call<Session>(t.server.url, 'POST', `/v1/sessions/${original.id}/fork`, {
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
      t.server.url,
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
      t.server.url,
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
      t.server.url,
      'GET',
      `/v1/sessions/${session.id}/branches`,
      alice(),
    );
    expect(branches.body.items.map((s) => s.id)).toEqual([branch.id]);

    // A version the session no longer has: 409, and nothing changes.
    const before = await snapshot(session.id);
    const stale = await call(t.server.url, 'POST', `/v1/sessions/${session.id}/rewind`, {
      ...alice(),
      body: { at_seq: 1, expected_version: session.version },
    });
    expect(stale.status).toBe(409);
    expect(stale.body.error.code).toBe('version_conflict');
    expect(await snapshot(session.id)).toEqual(before);
  });

  it('an ended session is forked but not rewound', async () => {
    const session = await sessionWith(2);
    await t.store.endSession(scope(), session.id);
    const fork = await call<Session>(t.server.url, 'POST', `/v1/sessions/${session.id}/fork`, {
      ...alice(),
      body: { at_seq: 2 },
    });
    expect(fork.status).toBe(201);
    expect(await contents(fork.body.id)).toEqual(['m1', 'm2']);
    const before = await snapshot(session.id);
    const rewind = await call(t.server.url, 'POST', `/v1/sessions/${session.id}/rewind`, {
      ...alice(),
      body: { at_seq: 1 },
    });
    expect(rewind.status).toBe(400);
    expect(rewind.body.error.code).toBe('invalid_request');
    expect(await snapshot(session.id)).toEqual(before);
  });

  it("the tenant key forks any of its users' sessions; the fork belongs to that user", async () => {
    const session = await sessionWith(2);
    const reply = await call<Session>(t.server.url, 'POST', `/v1/sessions/${session.id}/fork`, {
      token: t.server.keyA,
      body: { at_seq: 1 },
    });
    expect(reply.status).toBe(201);
    expect(reply.body.user_id).toBe(t.server.alice);
    expect(await contents(reply.body.id)).toEqual(['m1']);
    const listed = await call<{ items: Session[] }>(
      t.server.url,
      'GET',
      `/v1/sessions/${session.id}/branches`,
      {
        token: t.server.keyA,
      },
    );
    expect(listed.body.items.map((s) => s.id)).toEqual([reply.body.id]);
  });

  it('a fork sent again with its Idempotency-Key answers the same fork and makes no other', async () => {
    const session = await sessionWith(2);
    const send = () =>
      call<Session>(t.server.url, 'POST', `/v1/sessions/${session.id}/fork`, {
        ...alice(),
        headers: { 'idempotency-key': rand('fork-key-') },
        body: { at_seq: 1 },
      });
    const key = rand('fork-key-');
    const again = () =>
      call<Session>(t.server.url, 'POST', `/v1/sessions/${session.id}/fork`, {
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
    expect((await t.store.listBranches(scope(), session.id)).items.map((s) => s.id)).toEqual([
      first.body.id,
      other.body.id,
    ]);
  });

  it('the typed client forks, rewinds and lists branches; its errors carry the code', async () => {
    const client = createClient({ baseUrl: t.server.url, token: t.server.tokens.alice });
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
    const asBob = createClient({ baseUrl: t.server.url, token: t.server.tokens.bob });
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
