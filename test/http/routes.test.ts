/** What each route does for its owner: paging, open-task summaries, actions, memory, context, ending. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Action, MemoryItem, Message, Session, Task } from '../../src/core/model.js';
import { call, rand, startTestServer, type TestServer } from './harness.js';

let server: TestServer;
let token: string;

beforeAll(async () => {
  server = await startTestServer();
  token = server.tokens.alice;
});
afterAll(async () => {
  await server.close();
});

interface Page<T> {
  items: T[];
  next_cursor: string | null;
}

const scope = () => ({ tenant_id: server.tenantA, user_id: server.alice });

describe('sessions and messages', () => {
  it('pages sessions with a cursor and filters by status', async () => {
    const user = rand('pager');
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const made = await call<Session>(server.url, 'POST', '/v1/sessions', {
        token: server.keyA,
        body: { user_id: user },
      });
      ids.push(made.body.id);
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const query: string = `/v1/sessions?user_id=${user}&limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const page = await call<Page<Session>>(server.url, 'GET', query, { token: server.keyA });
      expect(page.status).toBe(200);
      seen.push(...page.body.items.map((s) => s.id));
      cursor = page.body.next_cursor;
    } while (cursor !== null);
    expect(seen.sort()).toEqual([...ids].sort());
    const paused = await call(server.url, 'PATCH', `/v1/sessions/${ids[0]}`, {
      token: server.keyA,
      headers: { 'if-match': '1' },
      body: { status: 'paused' },
    });
    expect(paused.status).toBe(200);
    const only = await call<Page<Session>>(server.url, 'GET', `/v1/sessions?user_id=${user}&status=paused`, {
      token: server.keyA,
    });
    expect(only.body.items.map((s) => s.id)).toEqual([ids[0]]);
  });

  it('reads a session with a summary of its open tasks only', async () => {
    const session = await server.store.createSession(scope(), {});
    const open = await server.store.createTask(scope(), {
      session_id: session.id,
      type: 'flight',
      status_line: 'need a date',
    });
    const done = await server.store.createTask(scope(), {
      session_id: session.id,
      type: 'flight',
      state: 'INIT',
    });
    await server.store.updateTask(scope(), done.id, done.version, { state: 'CANCELLED' });
    const reply = await call<Session & { open_tasks: Task[] }>(
      server.url,
      'GET',
      `/v1/sessions/${session.id}`,
      { token },
    );
    expect(reply.status).toBe(200);
    expect(reply.body.open_tasks.map((t) => [t.id, t.status_line])).toEqual([[open.id, 'need a date']]);
    expect(reply.headers.get('etag')).toBe(`"${session.version}"`);
  });

  it('appends messages with gap-free seq and pages them with after_seq and the cursor', async () => {
    const session = await server.store.createSession(scope(), {});
    const path = `/v1/sessions/${session.id}/messages`;
    for (const batch of [['a', 'b'], ['c'], ['d', 'e']]) {
      const reply = await call<{ items: Message[] }>(server.url, 'POST', path, {
        token,
        body: { messages: batch.map((content) => ({ role: 'user', content })) },
      });
      expect(reply.status).toBe(201);
    }
    const first = await call<Page<Message>>(server.url, 'GET', `${path}?limit=2`, { token });
    expect(first.body.items.map((m) => [m.seq, m.content])).toEqual([
      [1, 'a'],
      [2, 'b'],
    ]);
    const next = await call<Page<Message>>(
      server.url,
      'GET',
      `${path}?limit=2&cursor=${first.body.next_cursor}`,
      { token },
    );
    expect(next.body.items.map((m) => m.seq)).toEqual([3, 4]);
    const tail = await call<Page<Message>>(server.url, 'GET', `${path}?after_seq=4`, { token });
    expect(tail.body.items.map((m) => m.content)).toEqual(['e']);
    expect(tail.body.next_cursor).toBeNull();
  });

  it('context: the newest messages that fit the budget, oldest first', async () => {
    const session = await server.store.createSession(scope(), {});
    await server.store.appendMessages(
      scope(),
      session.id,
      Array.from({ length: 30 }, (_, i) => ({
        role: 'user' as const,
        content: `message number ${i} `.repeat(10),
      })),
    );
    const small = await call<{ messages: { content: string }[]; token_count: number }>(
      server.url,
      'GET',
      `/v1/sessions/${session.id}/context?max_tokens=200`,
      { token },
    );
    expect(small.status).toBe(200);
    expect(small.body.token_count).toBeLessThanOrEqual(200);
    expect(small.body.messages.length).toBeGreaterThan(0);
    expect(small.body.messages.length).toBeLessThan(30);
    expect(small.body.messages.at(-1)?.content).toContain('message number 29');
  });

  it('DELETE ends the session; its tasks stay', async () => {
    const session = await server.store.createSession(scope(), {});
    const task = await server.store.createTask(scope(), { session_id: session.id, type: 'flight' });
    const del = await call(server.url, 'DELETE', `/v1/sessions/${session.id}`, { token });
    expect(del.status).toBe(204);
    expect(del.text).toBe('');
    const after = await server.store.getSession(scope(), session.id);
    expect(after?.status ?? 'gone').toMatch(/ended|gone/);
    expect((await call(server.url, 'GET', `/v1/tasks/${task.id}`, { token })).status).toBe(200);
  });

  it('an ended session takes no more messages, context or TTL, and stays as it ended', async () => {
    const session = await server.store.createSession(scope(), {});
    expect((await call(server.url, 'DELETE', `/v1/sessions/${session.id}`, { token })).status).toBe(204);
    const ended = await server.store.getSession(scope(), session.id);
    expect(ended?.status).toBe('ended');
    const appended = await call(server.url, 'POST', `/v1/sessions/${session.id}/messages`, {
      token,
      body: { messages: [{ role: 'user', content: 'after the end' }] },
    });
    expect(appended.status).toBe(400);
    expect(appended.body.error.message).toBe(
      `session ${session.id} has ended and takes no more messages; start a new session`,
    );
    for (const body of [{ ttl_seconds: 31_536_000 }, { context: { revived: true } }, { status: 'active' }]) {
      const patched = await call(server.url, 'PATCH', `/v1/sessions/${session.id}`, {
        token,
        headers: { 'if-match': String(ended?.version) },
        body,
      });
      expect(patched.status, JSON.stringify(body)).toBe(400);
      expect(patched.body.error.message).toContain('has ended and takes no changes');
    }
    expect(await server.store.getSession(scope(), session.id)).toEqual(ended);
    expect(await server.store.listMessages(scope(), session.id)).toEqual([]);
    // Ending it again changes nothing either.
    expect((await call(server.url, 'DELETE', `/v1/sessions/${session.id}`, { token })).status).toBe(204);
  });
});

describe('tasks and actions', () => {
  it('lists tasks by session and state', async () => {
    const session = await server.store.createSession(scope(), {});
    const a = await server.store.createTask(scope(), {
      session_id: session.id,
      type: 'x',
      state: 'COLLECTING',
    });
    await server.store.createTask(scope(), { session_id: session.id, type: 'x', state: 'INIT' });
    const reply = await call<Page<Task>>(
      server.url,
      'GET',
      `/v1/tasks?session_id=${session.id}&state=COLLECTING,DONE`,
      {
        token,
      },
    );
    expect(reply.body.items.map((t) => t.id)).toEqual([a.id]);
  });

  it('begins an action once per key (201 then 200), completes it, and resolves an UNKNOWN one', async () => {
    const task = await server.store.createTask(scope(), { type: 'x' });
    const body = {
      task_id: task.id,
      type: 'tool_call',
      tool: 'airline.book',
      params: { f: 'TP123' },
      idempotency_key: rand('k'),
    };
    const first = await call<Action>(server.url, 'POST', '/v1/actions', { token, body });
    const second = await call<Action>(server.url, 'POST', '/v1/actions', { token, body });
    expect([first.status, second.status]).toEqual([201, 200]);
    expect(second.body.id).toBe(first.body.id);
    const unknown = await call<Action>(server.url, 'PATCH', `/v1/actions/${first.body.id}`, {
      token,
      body: { status: 'UNKNOWN', note: 'timed out' },
    });
    expect(unknown.body.status).toBe('UNKNOWN');
    const listed = await call<Page<Action>>(server.url, 'GET', '/v1/actions?status=UNKNOWN', { token });
    expect(listed.body.items.map((a) => a.id)).toContain(first.body.id);
    const resolved = await call<Action>(server.url, 'PATCH', `/v1/actions/${first.body.id}`, {
      token,
      body: { status: 'SUCCESS', result: { booking: 'ABC' } },
    });
    expect(resolved.status).toBe(200);
    expect([resolved.body.status, resolved.body.result]).toEqual(['SUCCESS', { booking: 'ABC' }]);
    expect(resolved.body.note).toContain(server.alice);
    const again = await call(server.url, 'PATCH', `/v1/actions/${first.body.id}`, {
      token,
      body: { status: 'FAILED' },
    });
    expect([400, 409]).toContain(again.status);
    const ofTask = await call<Page<Action>>(server.url, 'GET', `/v1/tasks/${task.id}/actions`, { token });
    expect(ofTask.body.items).toHaveLength(1);
  });

  it('a key reused for another task, type, tool or params answers 409 and begins nothing', async () => {
    const task = await server.store.createTask(scope(), { type: 'x' });
    const other = await server.store.createTask(scope(), { type: 'x' });
    const key = rand('k');
    const body = {
      task_id: task.id,
      type: 'tool_call',
      tool: 'airline.book',
      params: { to: 'SHA', n: 1 },
      idempotency_key: key,
    };
    const first = await call<Action>(server.url, 'POST', '/v1/actions', { token, body });
    expect(first.status).toBe(201);
    // The same request with its params' keys in another order is a retry.
    const retry = await call<Action>(server.url, 'POST', '/v1/actions', {
      token,
      body: { ...body, params: { n: 1, to: 'SHA' } },
    });
    expect([retry.status, retry.body.id]).toEqual([200, first.body.id]);
    for (const [field, change] of [
      ['task_id', { task_id: other.id }],
      ['type', { type: 'query' }],
      ['tool', { tool: 'airline.cancel' }],
      ['tool', { tool: null }],
      ['params', { params: { to: 'NYC', n: 1 } }],
    ] as const) {
      const reused = await call(server.url, 'POST', '/v1/actions', { token, body: { ...body, ...change } });
      expect(reused.status, field).toBe(409);
      expect(reused.body.error).toMatchObject({
        code: 'conflict',
        details: { action_id: first.body.id, field },
      });
    }
    const ofOther = await call<Page<Action>>(server.url, 'GET', `/v1/tasks/${other.id}/actions`, { token });
    expect(ofOther.body.items).toEqual([]);
  });

  it('a task in a final state takes no more changes and begins no new action; a retry still answers', async () => {
    const task = await server.store.createTask(scope(), { type: 'x', state: 'EXECUTING' });
    const body = { task_id: task.id, type: 'tool_call', params: {}, idempotency_key: rand('k') };
    const begun = await call<Action>(server.url, 'POST', '/v1/actions', { token, body });
    expect(begun.status).toBe(201);
    const done = await call<Task>(server.url, 'PATCH', `/v1/tasks/${task.id}`, {
      token,
      headers: { 'if-match': String(task.version) },
      body: { state: 'DONE' },
    });
    expect(done.status).toBe(200);
    for (const patch of [
      { state: 'DONE', slots: { rewritten: true } },
      { status_line: 'rewritten' },
      { state: 'CANCELLED' },
    ]) {
      const refused = await call(server.url, 'PATCH', `/v1/tasks/${task.id}`, {
        token,
        headers: { 'if-match': String(done.body.version) },
        body: patch,
      });
      expect(refused.status, JSON.stringify(patch)).toBe(409);
      expect(refused.body.error).toMatchObject({ code: 'illegal_transition', details: { state: 'DONE' } });
    }
    expect(await server.store.getTask(scope(), task.id)).toEqual(done.body);
    const fresh = await call(server.url, 'POST', '/v1/actions', {
      token,
      body: { ...body, idempotency_key: rand('k') },
    });
    expect(fresh.status).toBe(409);
    expect(fresh.body.error.message).toBe(
      `task ${task.id} is DONE, a final state, and begins no more actions`,
    );
    const retry = await call<Action>(server.url, 'POST', '/v1/actions', { token, body });
    expect([retry.status, retry.body.id]).toEqual([200, begun.body.id]);
  });

  it('PATCH of an action refuses what its status cannot carry, naming the field, and keeps a note', async () => {
    const task = await server.store.createTask(scope(), { type: 'x' });
    const begin = async () =>
      (
        await call<Action>(server.url, 'POST', '/v1/actions', {
          token,
          body: { task_id: task.id, type: 'tool_call', params: {}, idempotency_key: rand('k') },
        })
      ).body;
    const action = await begin();
    const refused = [
      [{ status: 'UNKNOWN', note: 'timed out', result: { maybe: true } }, 'result'],
      [{ status: 'UNKNOWN', note: 'timed out', error: { code: 'T', message: 't/o' } }, 'error'],
      [{ status: 'UNKNOWN' }, 'note'],
      [{ status: 'SUCCESS', result: { ok: true }, error: { code: 'E', message: 'boom' } }, 'error'],
      [{ status: 'FAILED', result: { ok: false }, error: { code: 'E', message: 'boom' } }, 'result'],
    ] as const;
    for (const [body, field] of refused) {
      const answer = await call(server.url, 'PATCH', `/v1/actions/${action.id}`, { token, body });
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect(answer.body.error).toMatchObject({ code: 'invalid_request', details: { field } });
      expect(answer.body.error.message).toMatch(new RegExp(`^body\\.${field}: `));
    }
    expect((await server.store.getAction(scope(), action.id))?.status).toBe('PENDING');
    // A note given with an outcome is kept (the action is resolved, by whom and why).
    const done = await call<Action>(server.url, 'PATCH', `/v1/actions/${action.id}`, {
      token,
      body: { status: 'SUCCESS', result: { ok: true }, note: 'checked by ops' },
    });
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({ status: 'SUCCESS', result: { ok: true }, note: 'checked by ops' });
    const failed = await begin();
    const failure = await call<Action>(server.url, 'PATCH', `/v1/actions/${failed.id}`, {
      token,
      body: { status: 'FAILED', error: { code: 'E', message: 'boom' } },
    });
    expect(failure.body).toMatchObject({
      status: 'FAILED',
      error: { code: 'E', message: 'boom' },
      note: null,
    });
  });
});

describe('memory', () => {
  it('puts, reads, lists by prefix and deletes', async () => {
    const ns = rand('prefs');
    const base = `/v1/users/${server.alice}/memory/${ns}`;
    for (const key of ['seat', 'seat.class', 'meal']) {
      const put = await call<MemoryItem>(server.url, 'PUT', `${base}/${key}`, {
        token,
        body: { value: { key } },
      });
      expect(put.status).toBe(200);
    }
    const got = await call<MemoryItem>(server.url, 'GET', `${base}/seat`, { token });
    expect(got.body.value).toEqual({ key: 'seat' });
    const listed = await call<Page<MemoryItem>>(server.url, 'GET', `${base}?prefix=seat`, { token });
    expect(listed.body.items.map((i) => i.key).sort()).toEqual(['seat', 'seat.class']);
    expect((await call(server.url, 'DELETE', `${base}/seat`, { token })).status).toBe(204);
    expect((await call(server.url, 'GET', `${base}/seat`, { token })).status).toBe(404);
    expect((await call(server.url, 'DELETE', `${base}/seat`, { token })).status).toBe(404);
  });
});

describe('list cursors over HTTP', () => {
  it('page memory keys of the longest length, and open for no other user', async () => {
    const ns = rand('long');
    const keys = ['a', 'é', '"'].map((c) => c.repeat(1024));
    for (const key of keys) {
      await server.store.putMemory(scope(), { namespace: ns, key, value: 1 });
    }
    const base = `/v1/users/${server.alice}/memory/${ns}`;
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const query: string = `${base}?limit=1${cursor === null ? '' : `&cursor=${cursor}`}`;
      const page = await call<Page<MemoryItem>>(server.url, 'GET', query, { token });
      expect(page.status).toBe(200);
      seen.push(...page.body.items.map((item) => item.key));
      cursor = page.body.next_cursor;
    } while (cursor !== null && seen.length < 5);
    expect(seen).toEqual([...keys].sort((a, b) => (a < b ? -1 : 1)));
    const first = await call<Page<MemoryItem>>(server.url, 'GET', `${base}?limit=1`, { token });
    const bobs = `/v1/users/${server.bob}/memory/${ns}?cursor=${first.body.next_cursor}`;
    const refused = await call<{ error: { code: string; message: string } }>(server.url, 'GET', bobs, {
      token: server.tokens.bob,
    });
    expect(refused.status).toBe(400);
    expect(refused.body.error.message).toMatch(/cursor/);
  });
});
