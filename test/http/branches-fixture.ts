/**
 * The server the fork, rewind and branches tests run against (branches.test.ts, branches-refusals.test.ts),
 * on each store they run on, and what they read of it: alice's sessions, their messages, and a snapshot of
 * what a refused call must leave as it was.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, expect } from 'vitest';
import type { Message, Session } from '../../src/core/model.js';
import { openStore } from '../../src/store/open.js';
import type { StateStore } from '../../src/store/types.js';
import { call, rand, startTestServer, type TestServer } from './harness.js';

export interface BranchStoreKind {
  readonly name: string;
  readonly url: () => string;
}

/** The in-process memory store and a SQLite file in `dataDir`. */
export function branchStores(dataDir: string): BranchStoreKind[] {
  return [
    { name: 'memory', url: () => 'memory:' },
    { name: 'sqlite file', url: () => `sqlite:${join(dataDir, `${rand('branches-')}.db`)}` },
  ];
}

interface Page<T> {
  items: T[];
  next_cursor: string | null;
}

/** A test server on a store of `kind`, started before the describe block's tests and closed after them. */
export function useBranchServer(kind: BranchStoreKind) {
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

  return {
    get store(): StateStore {
      return store;
    },
    get server(): TestServer {
      return server;
    },
    scope,
    alice,
    sessionWith,
    contents,
    seqs,
    snapshot,
  };
}
