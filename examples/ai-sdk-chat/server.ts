/**
 * A small chat app on the AI SDK and agentstate: plain node:http, a page using the SDK's own client
 * (`page.js`, bundled with esbuild when the server starts), `streamText` against any Chat Completions
 * endpoint through @ai-sdk/openai-compatible, and `createChatStore` for what the SDK leaves to its users:
 *
 *   POST /api/chats            a new chat: { id }
 *   GET  /api/chat/:id         its messages: { messages } (UIMessage[])
 *   POST /api/chat             { id, message }: saves the message, streams the answer (a UI message stream)
 *   GET  /api/chat/:id/stream  re-attaches to the chat's active answer (204 when there is none)
 *
 * Every chat belongs to one demo user; a real app takes the tenant and user from its sign-in.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import {
  convertToModelMessages,
  pipeUIMessageStreamToResponse,
  stepCountIs,
  streamText,
  type ToolSet,
} from 'ai';
import { build } from 'esbuild';
import { createChatStore } from '../../src/adapters/ai-sdk/index.js';
import { type AgentStateError, invalidRequest, isAgentStateError } from '../../src/core/errors.js';
import type { Scope, StateStore } from '../../src/store/types.js';

export interface ChatAppOptions {
  readonly store: StateStore;
  /** A Chat Completions endpoint, e.g. `http://127.0.0.1:11434/v1` (Ollama). */
  readonly modelBaseURL: string;
  readonly modelName: string;
  readonly apiKey?: string;
  readonly tools?: ToolSet;
  readonly scope?: Scope;
  /** Default 0 (any free port). */
  readonly port?: number;
  readonly host?: string;
}

export interface ChatApp {
  readonly url: string;
  close(): Promise<void>;
}

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>agentstate chat</title>
<style>
  body { font: 16px/1.5 system-ui, sans-serif; max-width: 46rem; margin: 2rem auto; padding: 0 1rem; }
  ol { list-style: none; padding: 0; }
  li { margin: 0.5rem 0; padding: 0.5rem 0.75rem; border-radius: 0.5rem; white-space: pre-wrap; }
  li[data-role="user"] { background: #e8f0fe; }
  li[data-role="assistant"] { background: #f1f3f4; }
  form { display: flex; gap: 0.5rem; }
  input { flex: 1; font: inherit; padding: 0.4rem; }
</style>
</head>
<body>
<h1>agentstate chat</h1>
<ol id="messages" aria-label="Messages"></ol>
<p id="status" role="status"></p>
<form id="composer"><input name="text" aria-label="Message" autocomplete="off"><button>Send</button></form>
<script type="module" src="/app.js"></script>
</body>
</html>`;

async function bundle(): Promise<string> {
  const result = await build({
    entryPoints: [join(import.meta.dirname, 'page.js')],
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    minify: true,
    legalComments: 'none',
    write: false,
    logLevel: 'warning',
  });
  return result.outputFiles[0]?.text ?? '';
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  let raw = '';
  for await (const chunk of req) {
    raw += chunk;
    if (raw.length > 1_000_000) throw invalidRequest('the request body is larger than 1 MB');
  }
  try {
    return JSON.parse(raw);
  } catch {
    throw invalidRequest('the request body must be JSON');
  }
}

const STATUS: Partial<Record<AgentStateError['code'], number>> = {
  invalid_request: 400,
  not_found: 404,
  conflict: 409,
};

function send(res: ServerResponse, status: number, body: unknown, type = 'application/json'): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' }).end(text);
}

export async function startChatApp(options: ChatAppOptions): Promise<ChatApp> {
  const chats = createChatStore({
    store: options.store,
    scope: options.scope ?? { tenant_id: 'demo', user_id: 'guest' },
  });
  const provider = createOpenAICompatible({
    name: 'chat',
    baseURL: options.modelBaseURL,
    ...(options.apiKey === undefined ? {} : { apiKey: options.apiKey }),
  });
  const app = await bundle();

  const route = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    const streamOf = /^\/api\/chat\/([^/]+)\/stream$/.exec(path);
    const chatOf = /^\/api\/chat\/([^/]+)$/.exec(path);
    if (req.method === 'GET' && path === '/') return send(res, 200, PAGE, 'text/html; charset=utf-8');
    if (req.method === 'GET' && path === '/app.js')
      return send(res, 200, app, 'text/javascript; charset=utf-8');
    if (req.method === 'POST' && path === '/api/chats')
      return send(res, 201, { id: await chats.createChat() });
    if (req.method === 'GET' && chatOf !== null) {
      const messages = await chats.loadChat(decodeURIComponent(chatOf[1] as string), options.tools ?? {});
      return send(res, 200, { messages });
    }
    if (req.method === 'POST' && path === '/api/chat') {
      const body = (await readJson(req)) as { id?: unknown; message?: unknown } | null;
      const turn = await chats.startTurn(String(body?.id), body?.message, options.tools ?? {});
      try {
        // No abortSignal from the request: a client that leaves comes back to the same answer.
        const result = streamText({
          model: provider.chatModel(options.modelName),
          messages: await convertToModelMessages(turn.messages),
          ...(options.tools === undefined ? {} : { tools: options.tools, stopWhen: stepCountIs(5) }),
        });
        pipeUIMessageStreamToResponse({ response: res, stream: turn.stream(result.toUIMessageStream()) });
      } catch (error) {
        await turn.fail(error);
        throw error;
      }
      return;
    }
    if (req.method === 'GET' && streamOf !== null) {
      const stream = await chats.resumeStream(decodeURIComponent(streamOf[1] as string));
      if (stream === null) {
        res.writeHead(204).end();
        return;
      }
      pipeUIMessageStreamToResponse({ response: res, stream });
      return;
    }
    send(res, 404, { error: { code: 'not_found', message: `no route ${req.method} ${path}` } });
  };

  const server: Server = createServer((req, res) => {
    route(req, res).catch((error: unknown) => {
      const status = isAgentStateError(error) ? (STATUS[error.code] ?? 500) : 500;
      const code = isAgentStateError(error) ? error.code : 'internal';
      const message = status === 500 ? 'internal error' : (error as Error).message;
      if (!res.headersSent) send(res, status, { error: { code, message } });
      else res.destroy();
    });
  });
  server.listen(options.port ?? 0, options.host ?? '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${options.host ?? '127.0.0.1'}:${port}`,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
