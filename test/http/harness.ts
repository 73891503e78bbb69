/**
 * A real server over loopback for HTTP tests: two tenants with API keys, user tokens for three users, an
 * expired token and a forged one. Every id is fresh, so tests share nothing.
 */
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { createAuthenticator } from '../../src/http/auth.js';
import type { ZodApp } from '../../src/http/deps.js';
import { createServer } from '../../src/http/server.js';
import { type HttpConfigInput, resolveConfig } from '../../src/server/config.js';
import type { RuntimeSetup } from '../../src/server/runtime-runner.js';
import type { TurnRunner } from '../../src/server/turn-runner.js';
import { openStore } from '../../src/store/open.js';
import type { StateStore } from '../../src/store/types.js';

export function rand(prefix: string): string {
  return `${prefix}${randomBytes(6).toString('hex')}`;
}

export interface Caller {
  readonly name: string;
  readonly token: string | null;
}

export interface TestServer {
  readonly url: string;
  readonly app: ZodApp;
  readonly store: StateStore;
  readonly tenantA: string;
  readonly tenantB: string;
  readonly alice: string;
  readonly bob: string;
  readonly carol: string;
  readonly keyA: string;
  readonly keyB: string;
  readonly tokens: {
    readonly alice: string;
    readonly bob: string;
    readonly carol: string;
    readonly expired: string;
    readonly forged: string;
  };
  close(): Promise<void>;
}

export interface StartOptions {
  readonly store?: StateStore;
  readonly turns?: TurnRunner | null;
  readonly agents?: RuntimeSetup;
  readonly limits?: HttpConfigInput['limits'];
}

export async function startTestServer(options: StartOptions = {}): Promise<TestServer> {
  const store = options.store ?? (await openStore('memory:'));
  const tenantA = rand('ta');
  const tenantB = rand('tb');
  const keyA = rand('key-a-0123456789-');
  const keyB = rand('key-b-0123456789-');
  const secret = randomBytes(32).toString('hex');
  const config = resolveConfig({
    apiKeys: { [keyA]: tenantA, [keyB]: tenantB },
    jwtSecret: secret,
    ...(options.limits ? { limits: options.limits } : {}),
  });
  const app = await createServer({
    store,
    config,
    logger: false,
    turns: options.turns ?? null,
    ...(options.agents ? { agents: options.agents } : {}),
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.server.address() as AddressInfo;
  const alice = rand('alice');
  const bob = rand('bob');
  const carol = rand('carol');
  const auth = createAuthenticator(config);
  const past = createAuthenticator(config, () => Date.now() - 3 * 3600_000);
  const otherSecret = createAuthenticator(
    resolveConfig({ apiKeys: { [keyA]: tenantA }, jwtSecret: 'x'.repeat(40) }),
  );
  const tokens = {
    alice: (await auth.mintUserToken(tenantA, alice, 600)).token,
    bob: (await auth.mintUserToken(tenantA, bob, 600)).token,
    carol: (await auth.mintUserToken(tenantB, carol, 600)).token,
    expired: (await past.mintUserToken(tenantA, alice, 60)).token,
    forged: (await otherSecret.mintUserToken(tenantA, alice, 600)).token,
  };
  return {
    url: `http://127.0.0.1:${port}`,
    app,
    store,
    tenantA,
    tenantB,
    alice,
    bob,
    carol,
    keyA,
    keyB,
    tokens,
    async close() {
      await app.close();
      if (options.store === undefined) await store.close();
    },
  };
}

export interface Reply<T> {
  readonly status: number;
  readonly body: T;
  readonly headers: Headers;
  readonly text: string;
}

export interface CallOptions {
  readonly token?: string | null;
  readonly body?: unknown;
  /** Sent as is, with content-type application/json. */
  readonly raw?: string;
  readonly headers?: Record<string, string>;
}

export async function call<T = ErrorReply>(
  base: string,
  method: string,
  path: string,
  options: CallOptions = {},
): Promise<Reply<T>> {
  const headers: Record<string, string> = { ...(options.headers ?? {}) };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  let body: string | undefined;
  if (options.raw !== undefined) body = options.raw;
  else if (options.body !== undefined) body = JSON.stringify(options.body);
  if (body !== undefined && headers['content-type'] === undefined)
    headers['content-type'] = 'application/json';
  const response = await fetch(`${base}${path}`, {
    method,
    headers,
    ...(body !== undefined ? { body } : {}),
  });
  const text = await response.text();
  let parsed: unknown = null;
  if (text !== '' && (response.headers.get('content-type') ?? '').includes('json')) parsed = JSON.parse(text);
  return { status: response.status, body: parsed as T, headers: response.headers, text };
}

export interface ErrorReply {
  readonly error: {
    readonly code: string;
    readonly message: string;
    readonly details?: Record<string, unknown>;
  };
}
