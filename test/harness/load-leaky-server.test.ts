/**
 * The load harness against servers built to leak (real HTTP server, real runtime and rules model, on a
 * store or a front that is wrong on purpose), at a small size: the unchanged server reports nothing; a store
 * that shows one user another session's message text is caught by the text markers alone (no id or name
 * of the other user is in it); a store whose action lookup ignores the user fails the action probes; a
 * front that answers a session list filtered by another user with the tenant's key fails those probes.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LinkedRuntime, linkRuntime } from '../../src/cli/commands/runtime-link.js';
import {
  type LoadReport,
  type LoadTestResult,
  runLoadTest,
  scanLeaks,
} from '../../src/harness/load/index.js';
import { openStore } from '../../src/store/open.js';
import type { Scope, StateStore } from '../../src/store/types.js';
import { startTestServer } from '../http/harness.js';

const dataDir = mkdtempSync(join(tmpdir(), 'agentstate-leaky-'));
let runtime: LinkedRuntime;
beforeAll(async () => {
  runtime = await linkRuntime(dataDir);
});
afterAll(async () => {
  await runtime.close();
  rmSync(dataDir, { recursive: true, force: true });
});

/** The store with some methods replaced; every other one is the store's own. */
function wrapped(store: StateStore, overrides: Partial<StateStore>): StateStore {
  const replaced = overrides as Record<PropertyKey, unknown>;
  return new Proxy(store, {
    get(target, property) {
      if (property in replaced) return replaced[property];
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** 3 users in each of back to back, baseline, load and saturation (and 1 to warm up), 5 turns each. */
const USERS = 3;
const PHASES = ['warmup', 'back_to_back', 'baseline', 'load', 'saturation'] as const;
const ALL_USERS = 1 + 4 * USERS;

async function loadtest(
  wrap: (store: StateStore) => StateStore,
  front?: (url: string, tenantKey: string) => Promise<Front>,
): Promise<LoadTestResult> {
  const store = await openStore('memory:');
  const server = await startTestServer({ store: wrap(store), agents: runtime.setup });
  const proxy = front ? await front(server.url, server.keyA) : null;
  try {
    return await runLoadTest({
      url: proxy?.url ?? server.url,
      apiKey: server.keyA,
      users: USERS,
      turns: 5,
      thinkMs: 5,
      warmupUsers: 1,
      probeConcurrency: 4,
      // Leak detection only: the store round-trip users (load.test.ts) would plant markers of their own.
      roundTripUsers: 0,
    });
  } finally {
    await proxy?.close();
    await server.close();
    await store.close();
  }
}

function expectBookingsDone(report: LoadReport): void {
  expect(report.bookings_expected).toBe(4 * USERS);
  expect(report.bookings_completed).toBe(4 * USERS);
  // every turn carried a marker, and the server kept each in its writer's messages
  expect(report.leak_check.markers_planted).toBe(ALL_USERS * 5);
  expect(report.leak_check.markers_stored).toBe(ALL_USERS * 5);
}

describe('loadtest against leaky servers', { timeout: 120_000 }, () => {
  it('the unchanged server: no leak, no failed probe, users of every phase probed on every route', async () => {
    const { report } = await loadtest((store) => store);
    expect(report.error_samples).toEqual([]);
    expect(report.leak_samples).toEqual([]);
    expect(report.probe_failure_samples).toEqual([]);
    expect(report).toMatchObject({ errors: 0, leaks: 0, probe_failures: 0, probe_spread: 3 });
    expectBookingsDone(report);
    expect(Object.keys(report.probe_phases).sort()).toEqual([...PHASES].sort());
    expect(Object.keys(report.probe_routes).sort()).toEqual(
      [
        'GET /v1/actions/:id',
        'GET /v1/actions?task_id',
        'GET /v1/sessions/:id',
        'GET /v1/sessions/:id/checkpoints',
        'GET /v1/sessions/:id/context',
        'GET /v1/sessions/:id/messages',
        'GET /v1/sessions?user_id',
        'GET /v1/tasks/:id',
        'GET /v1/tasks/:id/actions',
        'GET /v1/tasks/:id/events',
        'GET /v1/tasks?session_id',
        'GET /v1/tasks?user_id',
        'GET /v1/users/:user/memory/:namespace',
        'GET /v1/users/:user/memory/:namespace/:key',
      ].sort(),
    );
    // every pair of the load phase (3 x 2), and 3 probers for each of the 13 users: at least 3 x 13 pairs
    expect(report.probes).toBeGreaterThanOrEqual(3 * ALL_USERS * 13);
    expect(report.leak_check.answers).toBeGreaterThan(report.probes);
  });

  it("another session's message text in a user's own messages: caught by the markers alone", async () => {
    const sessions = new Map<string, Scope>();
    const { report, users } = await loadtest((store) =>
      wrapped(store, {
        createSession: async (scope, input) => {
          const session = await store.createSession(scope, input);
          sessions.set(session.id, scope);
          return session;
        },
        // the user's own messages, and as its last one the first words of another user's session
        listMessages: async (scope, id, query) => {
          const own = await store.listMessages(scope, id, query);
          const last = own.at(-1);
          const other = [...sessions].find(([sid, owner]) => sid !== id && owner.user_id !== scope.user_id);
          if (last === undefined || other === undefined) return own;
          const [first] = await store.listMessages(other[1], other[0], { limit: 1 });
          return first === undefined ? own : [...own, { ...last, content: first.content }];
        },
      }),
    );
    expect(report.leaks).toBeGreaterThan(0);
    // only the marker gives the text away: it holds no id, token or name of its writer
    expect(report.leaks_by_kind.text).toBe(report.leaks);
    expect(report.leak_samples[0]).toMatchObject({ kind: 'text', status: 200 });
    expect(report.leak_samples[0]?.request).toMatch(/^GET \/v1\/sessions\/\S+\/messages/);
    // the leak belongs to the user who wrote the text, not to the one who was shown it
    const sample = report.leak_samples[0];
    const writer = users.find((u) => u.userId === sample?.owner);
    expect(writer?.planted).toContain(sample?.value);
    expect(sample?.receiver).not.toBe(sample?.owner);
    // without the planted markers the same answers show nothing
    expect(scanLeaks(users.map((u) => ({ ...u, planted: [] }))).leaks).toEqual([]);
    expect(report.probe_failures).toBe(0);
    expectBookingsDone(report);
  });

  it("an action lookup that ignores the user: the action probes fail, and the leak check sees the other user's ids", async () => {
    const { report } = await loadtest((store) =>
      wrapped(store, {
        getAction: (scope, id) => store.getAction({ tenant_id: scope.tenant_id }, id),
      }),
    );
    const route = report.probe_routes['GET /v1/actions/:id'];
    expect(route?.failures).toBeGreaterThan(0);
    expect(route?.failures).toBe(route?.probes);
    expect(report.probe_failures).toBe(route?.failures);
    expect(report.probe_failure_samples[0]).toMatchObject({
      route: 'GET /v1/actions/:id',
      expected: 'not_found',
      status: 200,
    });
    expect(report.leaks).toBeGreaterThan(0);
    expect(report.leaks_by_kind.passenger_name).toBeGreaterThan(0);
    expect(report.errors).toBe(0);
  });

  it("a front that lists another user's sessions with the tenant key: the session-list probes fail", async () => {
    const { report } = await loadtest((store) => store, leakySessionList);
    const route = report.probe_routes['GET /v1/sessions?user_id'];
    expect(route?.failures).toBeGreaterThan(0);
    expect(route?.failures).toBe(route?.probes);
    expect(report.probe_failures).toBe(route?.failures);
    expect(report.leaks_by_kind.session_id).toBeGreaterThan(0);
  });
});

interface Front {
  readonly url: string;
  close(): Promise<void>;
}

/** Forwards every request, but asks for a session list filtered by a user with the tenant's own key. */
async function leakySessionList(target: string, tenantKey: string): Promise<Front> {
  const forward = async (request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const path = request.url ?? '/';
    const headers: Record<string, string> = {};
    for (const name of ['authorization', 'content-type', 'idempotency-key', 'if-match']) {
      const value = request.headers[name];
      if (typeof value === 'string') headers[name] = value;
    }
    if (path.startsWith('/v1/sessions?') && path.includes('user_id=')) {
      headers.authorization = `Bearer ${tenantKey}`;
    }
    const method = request.method ?? 'GET';
    const body = chunks.length > 0 ? Buffer.concat(chunks) : undefined;
    const answer = await fetch(`${target}${path}`, { method, headers, ...(body ? { body } : {}) });
    response.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'text/plain' });
    response.end(Buffer.from(await answer.arrayBuffer()));
  };
  const server: Server = createServer((request, response) => {
    forward(request, response).catch((error: unknown) => {
      response.writeHead(502);
      response.end(String(error));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
