/**
 * The authorization matrix: every route x {owner, owner's tenant key, other user of the tenant, other
 * tenant's key, other tenant's user, no token, forged token, expired token}. Records of someone else answer
 * 404 and carry none of the owner's data; calls without a valid credential answer 401; and no refused call
 * changes anything stored. On every store: memory, a SQLite file, PostgreSQL (a schema of its own), Redis (a
 * key prefix of its own) and tiered (both), each removed afterwards; one server per store.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LinkedRuntime, linkRuntime } from '../../src/cli/commands/runtime-link.js';
import type { JsonObject } from '../../src/core/json.js';
import { openStore } from '../../src/store/open.js';
import type { StateStore } from '../../src/store/types.js';
import { dropSchema, randomSchema, schemaUrl } from '../store/postgres-env.js';
import { randomPrefix, removePrefix, urlWithPrefix } from '../store/redis-env.js';
import { tieredEnv } from '../store/tiered-env.js';
import { type Caller, call, rand, startTestServer, type TestServer } from './harness.js';

let server: TestServer;
let runtime: LinkedRuntime;
const dataDir = mkdtempSync(join(tmpdir(), 'agentstate-authz-'));

beforeAll(async () => {
  runtime = await linkRuntime(dataDir);
});
afterAll(async () => {
  await runtime.close();
  rmSync(dataDir, { recursive: true, force: true });
});

/** A store the matrix runs on: its URL over fresh data, and how to remove that data afterwards. */
interface StoreKind {
  readonly name: string;
  prepare(): { readonly url: string; cleanup(): Promise<void> };
}

const STORES: readonly StoreKind[] = [
  { name: 'memory', prepare: () => ({ url: 'memory:', cleanup: async () => undefined }) },
  {
    name: 'sqlite',
    prepare: () => ({ url: `sqlite:${join(dataDir, 'authz.db')}`, cleanup: async () => undefined }),
  },
  {
    name: 'postgres',
    prepare: () => {
      const schema = randomSchema();
      return { url: schemaUrl(schema), cleanup: () => dropSchema(schema) };
    },
  },
  {
    name: 'redis',
    prepare: () => {
      const prefix = randomPrefix();
      return { url: urlWithPrefix(prefix), cleanup: () => removePrefix(prefix) };
    },
  },
  { name: 'tiered', prepare: () => tieredEnv() },
];

interface Fixture {
  readonly marker: string;
  readonly sessionId: string;
  readonly taskId: string;
  readonly actionId: string;
  readonly namespace: string;
  readonly key: string;
}

async function fixture(): Promise<Fixture> {
  const { store, tenantA, alice } = server;
  const scope = { tenant_id: tenantA, user_id: alice };
  const marker = rand('secret-');
  const session = await store.createSession(scope, { agent: 'flight_booking', context: { marker } });
  await store.appendMessages(scope, session.id, [{ role: 'user', content: `hello ${marker}` }]);
  const task = await store.createTask(scope, { session_id: session.id, type: 'demo', slots: { marker } });
  const { action } = await store.beginAction(scope, {
    task_id: task.id,
    session_id: session.id,
    type: 'tool_call',
    tool: 'demo.tool',
    params: { marker },
    idempotency_key: rand('k-'),
  });
  const namespace = rand('ns');
  await store.putMemory(scope, { namespace, key: 'pref', value: { marker } });
  return { marker, sessionId: session.id, taskId: task.id, actionId: action.id, namespace, key: 'pref' };
}

/** Everything a refused call must leave as it was. */
async function snapshot(f: Fixture): Promise<JsonObject> {
  const { store, tenantA, alice } = server;
  const scope = { tenant_id: tenantA, user_id: alice };
  const session = await store.getSession(scope, f.sessionId);
  const messages = await store.listMessages(scope, f.sessionId);
  const branches = await store.listBranches(scope, f.sessionId);
  const task = await store.getTask(scope, f.taskId);
  const action = await store.getAction(scope, f.actionId);
  const actions = await store.listActions(scope, { task_id: f.taskId });
  const memory = await store.getMemory(scope, f.namespace, f.key);
  const otherTenantMemory = await store.getMemory(
    { tenant_id: server.tenantB, user_id: alice },
    f.namespace,
    f.key,
  );
  return {
    session: session ? [session.version, session.status, session.context] : null,
    messages: messages.length,
    branches: branches.items.length,
    task: task ? [task.version, task.status_line] : null,
    action: action ? action.status : null,
    actions: actions.items.length,
    memory: memory ? memory.value : null,
    otherTenantMemory: otherTenantMemory ? otherTenantMemory.value : null,
  };
}

interface Row {
  readonly name: string;
  readonly method: string;
  readonly path: (f: Fixture) => string;
  readonly body?: (f: Fixture) => unknown;
  readonly headers?: Record<string, string>;
  /** The owner's (and the owner's tenant key's) status. */
  readonly ok: number;
}

const ROWS: Row[] = [
  { name: 'read session', method: 'GET', path: (f) => `/v1/sessions/${f.sessionId}`, ok: 200 },
  {
    name: 'patch session',
    method: 'PATCH',
    path: (f) => `/v1/sessions/${f.sessionId}`,
    headers: { 'if-match': '"1"' },
    body: () => ({ context: { changed: true } }),
    ok: 200,
  },
  { name: 'end session', method: 'DELETE', path: (f) => `/v1/sessions/${f.sessionId}`, ok: 204 },
  {
    name: 'fork session',
    method: 'POST',
    path: (f) => `/v1/sessions/${f.sessionId}/fork`,
    // Before its first message: the fixture's action is PENDING after it, which no fork point may be.
    body: () => ({ at_seq: 0 }),
    ok: 201,
  },
  {
    name: 'rewind session',
    method: 'POST',
    path: (f) => `/v1/sessions/${f.sessionId}/rewind`,
    body: () => ({ at_seq: 0 }),
    ok: 200,
  },
  { name: 'branches', method: 'GET', path: (f) => `/v1/sessions/${f.sessionId}/branches`, ok: 200 },
  {
    name: 'append messages',
    method: 'POST',
    path: (f) => `/v1/sessions/${f.sessionId}/messages`,
    body: () => ({ messages: [{ role: 'user', content: 'more' }] }),
    ok: 201,
  },
  { name: 'list messages', method: 'GET', path: (f) => `/v1/sessions/${f.sessionId}/messages`, ok: 200 },
  {
    name: 'context',
    method: 'GET',
    path: (f) => `/v1/sessions/${f.sessionId}/context?max_tokens=500`,
    ok: 200,
  },
  {
    name: 'turn',
    method: 'POST',
    path: (f) => `/v1/sessions/${f.sessionId}/turns`,
    body: () => ({ input: 'hello' }),
    ok: 200,
  },
  { name: 'checkpoints', method: 'GET', path: (f) => `/v1/sessions/${f.sessionId}/checkpoints`, ok: 200 },
  {
    name: 'resume',
    method: 'POST',
    path: (f) => `/v1/sessions/${f.sessionId}/resume`,
    body: () => ({}),
    // The fixture's session has no run yet: nothing to resume.
    ok: 409,
  },
  { name: 'read task', method: 'GET', path: (f) => `/v1/tasks/${f.taskId}`, ok: 200 },
  {
    name: 'patch task',
    method: 'PATCH',
    path: (f) => `/v1/tasks/${f.taskId}`,
    headers: { 'if-match': '1' },
    body: () => ({ status_line: 'changed' }),
    ok: 200,
  },
  { name: 'task events', method: 'GET', path: (f) => `/v1/tasks/${f.taskId}/events`, ok: 200 },
  { name: 'task actions', method: 'GET', path: (f) => `/v1/tasks/${f.taskId}/actions`, ok: 200 },
  {
    name: 'begin action',
    method: 'POST',
    path: () => '/v1/actions',
    body: (f) => ({ task_id: f.taskId, type: 'tool_call', params: {}, idempotency_key: rand('k-') }),
    ok: 201,
  },
  { name: 'read action', method: 'GET', path: (f) => `/v1/actions/${f.actionId}`, ok: 200 },
  {
    name: 'complete action',
    method: 'PATCH',
    path: (f) => `/v1/actions/${f.actionId}`,
    body: () => ({ status: 'SUCCESS', result: { ok: true } }),
    ok: 200,
  },
  {
    name: 'read memory',
    method: 'GET',
    path: (f) => `/v1/users/${server.alice}/memory/${f.namespace}/${f.key}`,
    ok: 200,
  },
  {
    name: 'delete memory',
    method: 'DELETE',
    path: (f) => `/v1/users/${server.alice}/memory/${f.namespace}/${f.key}`,
    ok: 204,
  },
];

type Who =
  | 'owner'
  | 'tenantKey'
  | 'otherUser'
  | 'otherTenantKey'
  | 'otherTenantUser'
  | 'none'
  | 'forged'
  | 'expired';

function callers(): Record<Who, Caller> {
  const t = server.tokens;
  return {
    owner: { name: 'owner', token: t.alice },
    tenantKey: { name: "owner's tenant key", token: server.keyA },
    otherUser: { name: 'other user of the tenant', token: t.bob },
    otherTenantKey: { name: 'other tenant key', token: server.keyB },
    otherTenantUser: { name: 'user of another tenant', token: t.carol },
    none: { name: 'no token', token: null },
    forged: { name: 'token signed with another secret', token: t.forged },
    expired: { name: 'expired token', token: t.expired },
  };
}

const REFUSED: Record<Exclude<Who, 'owner' | 'tenantKey'>, number> = {
  otherUser: 404,
  otherTenantKey: 404,
  otherTenantUser: 404,
  none: 401,
  forged: 401,
  expired: 401,
};

async function send(row: Row, f: Fixture, token: string | null) {
  return call(server.url, row.method, row.path(f), {
    token,
    ...(row.body ? { body: row.body(f) } : {}),
    ...(row.headers ? { headers: row.headers } : {}),
  });
}

describe.each(STORES)('authorization matrix ($name)', (kind) => {
  let store: StateStore | undefined;
  let started: TestServer | undefined;
  let cleanup: (() => Promise<void>) | undefined;
  beforeAll(async () => {
    const prepared = kind.prepare();
    cleanup = () => prepared.cleanup();
    store = await openStore(prepared.url);
    started = await startTestServer({ store, agents: runtime.setup });
    server = started;
  }, 30_000);
  afterAll(async () => {
    await started?.close();
    await store?.close();
    // The server and store first, then their data.
    await cleanup?.();
  }, 30_000);

  for (const row of ROWS) {
    it(`${row.method} ${row.name}: refused for everyone but the owner, and nothing changes`, async () => {
      const f = await fixture();
      const before = await snapshot(f);
      const all = callers();
      for (const [who, status] of Object.entries(REFUSED)) {
        const reply = await send(row, f, all[who as Who].token);
        expect({ who, status: reply.status }).toEqual({ who, status });
        expect(reply.body.error.code).toBe(status === 401 ? 'unauthorized' : 'not_found');
        expect(reply.text).not.toContain(f.marker);
      }
      expect(await snapshot(f)).toEqual(before);
      expect((await send(row, f, all.owner.token)).status).toBe(row.ok);
    });

    it(`${row.method} ${row.name}: the owner's tenant key may`, async () => {
      const f = await fixture();
      expect((await send(row, f, server.keyA)).status).toBe(row.ok);
    });
  }

  it('PUT memory: another user of the tenant gets 404; another tenant writes only into its own tenant', async () => {
    const f = await fixture();
    const path = `/v1/users/${server.alice}/memory/${f.namespace}/${f.key}`;
    const body = { value: { overwritten: true } };
    expect((await call(server.url, 'PUT', path, { token: server.tokens.bob, body })).status).toBe(404);
    expect((await call(server.url, 'PUT', path, { token: null, body })).status).toBe(401);
    expect((await call(server.url, 'PUT', path, { token: server.tokens.expired, body })).status).toBe(401);
    const before = await snapshot(f);
    expect((await call(server.url, 'PUT', path, { token: server.keyB, body })).status).toBe(200);
    const after = await snapshot(f);
    expect(after.memory).toEqual(before.memory);
    expect(after.otherTenantMemory).toEqual({ overwritten: true });
    expect((await call(server.url, 'PUT', path, { token: server.tokens.alice, body })).status).toBe(200);
  });

  it('lists show only the caller’s records', async () => {
    const f = await fixture();
    const lists = [
      '/v1/sessions',
      '/v1/tasks',
      '/v1/actions',
      `/v1/users/${server.alice}/memory/${f.namespace}`,
      `/v1/tasks?session_id=${f.sessionId}`,
    ];
    for (const path of lists) {
      for (const token of [server.tokens.alice, server.keyA]) {
        const reply = await call(server.url, 'GET', path, { token });
        expect({ path, status: reply.status }).toEqual({ path, status: 200 });
        expect(reply.text).toContain(f.marker);
      }
      for (const token of [server.tokens.bob, server.keyB, server.tokens.carol]) {
        const reply = await call(server.url, 'GET', path, { token });
        expect([200, 404]).toContain(reply.status);
        expect(reply.text).not.toContain(f.marker);
      }
      for (const token of [null, server.tokens.forged, server.tokens.expired]) {
        expect((await call(server.url, 'GET', path, { token })).status).toBe(401);
      }
    }
  });

  it('a user token cannot name another user in the body or query', async () => {
    const { alice, bob } = server;
    const asBob = { token: server.tokens.bob };
    const create = await call(server.url, 'POST', '/v1/sessions', { ...asBob, body: { user_id: alice } });
    expect(create.status).toBe(400);
    expect(create.body.error.message).toContain('user_id');
    expect((await call(server.url, 'GET', `/v1/sessions?user_id=${alice}`, asBob)).status).toBe(400);
    expect((await call(server.url, 'GET', `/v1/tasks?user_id=${alice}`, asBob)).status).toBe(400);
    const own = await call<{ user_id: string }>(server.url, 'POST', '/v1/sessions', {
      ...asBob,
      body: { user_id: bob },
    });
    expect(own.status).toBe(201);
    expect(own.body.user_id).toBe(bob);
  });

  it('a tenant key must name the user of a new session; the tenant always comes from the key', async () => {
    const missing = await call(server.url, 'POST', '/v1/sessions', { token: server.keyA, body: {} });
    expect(missing.status).toBe(400);
    expect(missing.body.error.message).toContain('user_id');
    const made = await call<{ tenant_id: string; user_id: string }>(server.url, 'POST', '/v1/sessions', {
      token: server.keyB,
      body: { user_id: server.alice },
    });
    expect(made.status).toBe(201);
    expect(made.body.tenant_id).toBe(server.tenantB);
    const tenantInBody = await call(server.url, 'POST', '/v1/sessions', {
      token: server.keyA,
      body: { user_id: server.alice, tenant_id: server.tenantB },
    });
    expect(tenantInBody.status).toBe(400);
  });

  it('POST /v1/tokens: only a tenant key mints, for its own tenant', async () => {
    const path = '/v1/tokens';
    const body = { user_id: server.alice, ttl_seconds: 60 };
    for (const token of [server.tokens.alice, null, server.tokens.expired, server.tokens.forged]) {
      expect((await call(server.url, 'POST', path, { token, body })).status).toBe(401);
    }
    const minted = await call<{ token: string; tenant_id: string }>(server.url, 'POST', path, {
      token: server.keyB,
      body,
    });
    expect(minted.status).toBe(201);
    expect(minted.body.tenant_id).toBe(server.tenantB);
    // alice of tenant B is not alice of tenant A.
    const f = await fixture();
    const probe = await call(server.url, 'GET', `/v1/sessions/${f.sessionId}`, { token: minted.body.token });
    expect(probe.status).toBe(404);
  });
});
