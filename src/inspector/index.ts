/**
 * The inspector: a web page at `/` to watch sessions, follow a task's timeline and state machine, resolve
 * UNKNOWN actions and chat with a session's agent. The page talks only to the public API (`/v1/...`) with
 * the token its user enters (kept in the tab's sessionStorage), and polls it every `pollMs`. The open session
 * is followed over its live events instead (`GET /v1/sessions/{id}/events`, read with fetch streaming so
 * that the token goes in the Authorization header): the view changes as they arrive, and that session is
 * polled only every max(10 × pollMs, 30 s) while the stream is up (every `pollMs` while it is down).
 *
 * Served: `GET /` (the HTML shell), `GET /inspector/app.js` and `GET /inspector/app.css` (the Preact client,
 * bundled by `build.mjs`, or in memory from the sources: see `bundle.ts`). No CDN, no outside network: the
 * Content-Security-Policy allows this origin only.
 *
 * Mount it on the server before `listen`: `await registerInspector(app)`. These paths need no token (the
 * page holds no data); the server's auth hook must treat them as public (see the report in the README).
 */
import { BUILTIN_AGENTS } from '../agents/index.js';
import type { ZodApp } from '../http/deps.js';
import type { Agent, AgentRegistry } from '../runtime/agent.js';
import { loadAssets } from './bundle.js';
import { renderPage, sketchTaskTypes } from './page.js';

export { type InspectorAssets, loadAssets } from './bundle.js';

/** The default polling interval of the page, in ms: lists refresh this often (an open session is live). */
export const DEFAULT_POLL_MS = 2000;

export interface InspectorOptions {
  /** The agents whose task types the page describes (slots, required ones). Default: the built-in agents. */
  readonly agents?: AgentRegistry | readonly Agent[];
  /** How often the page polls the API, in ms. Default `DEFAULT_POLL_MS` (2000). */
  readonly pollMs?: number;
}

/** The paths the inspector serves; the server's auth hook must let them through without a token. */
export const INSPECTOR_PATHS: readonly string[] = ['/', '/inspector/app.js', '/inspector/app.css'];

export function isInspectorPath(path: string): boolean {
  return INSPECTOR_PATHS.includes(path);
}

const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; " +
    "form-action 'none'; base-uri 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-cache',
} as const;

function agentList(agents: InspectorOptions['agents']): Agent[] {
  if (agents === undefined) return [...BUILTIN_AGENTS];
  if (Array.isArray(agents)) return [...(agents as readonly Agent[])];
  const registry = agents as AgentRegistry;
  return registry
    .names()
    .map((name) => registry.get(name))
    .filter((agent): agent is Agent => agent !== undefined);
}

export async function registerInspector(app: ZodApp, options: InspectorOptions = {}): Promise<void> {
  const agents = agentList(options.agents);
  const pollMs = options.pollMs ?? DEFAULT_POLL_MS;
  if (!Number.isInteger(pollMs) || pollMs < 200)
    throw new Error('inspector: pollMs must be an integer >= 200');
  const html = renderPage({
    base: '/inspector/',
    taskTypes: sketchTaskTypes(agents),
    pollMs,
    agents: agents.map((agent) => agent.name),
  });
  const hidden = { schema: { hide: true } };
  // Bundle (or read) the client now, so the first page load does not wait for it; errors surface there.
  loadAssets().catch(() => undefined);

  app.get('/', hidden, async (_request, reply) =>
    reply.headers(SECURITY_HEADERS).type('text/html; charset=utf-8').send(html),
  );
  app.get('/inspector/app.js', hidden, async (_request, reply) =>
    reply
      .headers(SECURITY_HEADERS)
      .type('text/javascript; charset=utf-8')
      .send((await loadAssets()).js),
  );
  app.get('/inspector/app.css', hidden, async (_request, reply) =>
    reply
      .headers(SECURITY_HEADERS)
      .type('text/css; charset=utf-8')
      .send((await loadAssets()).css),
  );
}
