/**
 * A real server for the inspector's browser tests: a SQLite store in a temp dir, two tenants with API keys,
 * user tokens, the runtime with the built-in agents, the rules model and the demo tools (the airline runs
 * on loopback), the inspector mounted, and headless Chromium driven by playwright-core.
 *
 * `deploy.build` of a service named `flaky-…` does its work and then fails with an unknown outcome (the
 * build server "timed out"): the action becomes UNKNOWN and the task is blocked until a person resolves it.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { BUILTIN_AGENTS } from '../../src/agents/index.js';
import type { JsonValue } from '../../src/core/json.js';
import { type AirlineService, createDemoTools, startAirlineService } from '../../src/demo/index.js';
import { createAuthenticator } from '../../src/http/auth.js';
import { resolveConfig } from '../../src/http/config.js';
import type { ZodApp } from '../../src/http/deps.js';
import { createServer } from '../../src/http/server.js';
import { createRulesModel } from '../../src/models/rules/index.js';
import { createModelRegistry } from '../../src/models/types.js';
import { createAgentRegistry } from '../../src/runtime/agent.js';
import { createToolRegistry, type Tool } from '../../src/runtime/tool.js';
import { openStore } from '../../src/store/open.js';
import type { StateStore } from '../../src/store/types.js';

export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export function rand(prefix: string): string {
  return `${prefix}${randomBytes(6).toString('hex')}`;
}

export interface InspectorServer {
  readonly url: string;
  readonly app: ZodApp;
  readonly store: StateStore;
  readonly dbFile: string;
  readonly dir: string;
  readonly tenant: string;
  readonly key: string;
  readonly otherKey: string;
  /** The result each flaky build really produced before its answer was lost, by idempotency key. */
  readonly lostBuilds: Map<string, JsonValue>;
  token(user: string): Promise<string>;
  close(): Promise<void>;
}

function flakyBuilds(tools: ReturnType<typeof createDemoTools>, lost: Map<string, JsonValue>) {
  return createToolRegistry(
    tools.names().map((name) => {
      const tool = tools.get(name) as Tool;
      if (name !== 'deploy.build') return tool;
      const flaky: Tool = {
        name: tool.name,
        description: tool.description,
        params: tool.params,
        async execute(params, ctx) {
          const result = await tool.execute(params, ctx);
          const service = (params as { service?: unknown }).service;
          if (typeof service === 'string' && service.startsWith('flaky-')) {
            lost.set(ctx.idempotencyKey, result);
            throw new Error('the build server timed out');
          }
          return result;
        },
      };
      return flaky;
    }),
  );
}

/** The server on a SQLite file in a temp dir, or on `storeUrl` (for example a PostgreSQL schema). */
export async function startInspectorServer(storeUrl?: string): Promise<InspectorServer> {
  const dir = mkdtempSync(join(tmpdir(), 'agentstate-inspector-'));
  const dbFile = join(dir, 'state.db');
  const store = await openStore(storeUrl ?? `sqlite:${dbFile}`);
  const airline: AirlineService = await startAirlineService({ dataDir: join(dir, 'airline') });
  const lostBuilds = new Map<string, JsonValue>();
  const tools = flakyBuilds(
    createDemoTools({ workspaceDir: join(dir, 'workspace'), airlineUrl: airline.url }),
    lostBuilds,
  );
  const tenant = rand('tenant');
  const key = rand('key-inspector-0123456789-');
  const otherKey = rand('key-other-0123456789-');
  const config = resolveConfig({
    apiKeys: { [key]: tenant, [otherKey]: rand('other') },
    jwtSecret: randomBytes(32).toString('hex'),
  });
  const agents = createAgentRegistry(BUILTIN_AGENTS);
  const app = await createServer({
    store,
    config,
    logger: false,
    agents: { agents, models: createModelRegistry([createRulesModel()]), tools },
    inspector: { agents, pollMs: 500 },
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.server.address() as AddressInfo;
  const auth = createAuthenticator(config);
  return {
    url: `http://127.0.0.1:${port}`,
    app,
    store,
    dbFile,
    dir,
    tenant,
    key,
    otherKey,
    lostBuilds,
    token: async (user) => (await auth.mintUserToken(tenant, user, 600)).token,
    async close() {
      await app.close();
      await airline.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The API as a test client sees it (to set up records, and to check what the page did). */
export async function apiCall<T>(
  server: InspectorServer,
  method: string,
  path: string,
  body?: unknown,
  token = server.key,
): Promise<T> {
  const response = await fetch(`${server.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`);
  return (text === '' ? null : JSON.parse(text)) as T;
}

export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: process.env.AGENTSTATE_CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    args: CHROMIUM_ARGS,
  });
}

/**
 * A new tab on the inspector, signed in with `token`. The page's own files need no token; every API call
 * the page makes carries the token the test typed.
 */
export async function openInspector(browser: Browser, server: InspectorServer, token: string): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('pageerror', (error) => problems.push(error.message));
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(message.text());
  });
  (page as Page & { problems?: string[] }).problems = problems;
  await page.goto(`${server.url}/`);
  await page.getByLabel('API token').fill(token);
  await page.getByRole('button', { name: 'Use this token' }).click();
  await page.getByRole('navigation', { name: 'Main' }).waitFor();
  return page;
}

export async function screenshot(page: Page, name: string): Promise<string> {
  const dir = join(process.cwd(), 'reports', 'inspector');
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}

/** Runs `crash-child.ts`: a deploy turn killed by SIGKILL inside `deploy.run_tests`. Resolves its signal. */
export function crashDeployRun(
  server: InspectorServer,
  user: string,
  sessionId: string,
  input: string,
): Promise<NodeJS.Signals | null> {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      join(import.meta.dirname, 'crash-child.ts'),
      server.dbFile,
      join(server.dir, 'workspace'),
      server.tenant,
      user,
      sessionId,
      input,
    ],
    { stdio: ['ignore', 'inherit', 'inherit'] },
  );
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (_code, signal) => resolve(signal));
  });
}
