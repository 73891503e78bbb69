/**
 * A local HTTP server that speaks the OpenAI Chat Completions protocol (`POST /v1/chat/completions`),
 * streamed (server-sent events, when the request says `stream: true`) and not, with scripted,
 * deterministic answers:
 *
 * - a forced `extract` call answers the extraction scripted for the user's message (nothing found otherwise);
 * - a forced `route` call answers "no open task, no new type";
 * - any other call (the reply) answers the draft, marked with the request's model: `«model» draft`;
 * - a call that offers tools (`tool_choice: auto`) for a user message with a scripted tool plan asks for
 *   the plan's calls one answer at a time (the next one once the previous call's result came back), then
 *   answers `«model» done: <the last tool result>`; without a plan it answers `«model» no tool needed`.
 *
 * `failing` answers 500 with an error that quotes the request's Authorization header (as some endpoints
 * echo a bad key), to prove that no caller repeats it. `stop()` and `start()` take it down and back up on
 * the same port.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface SeenRequest {
  readonly auth: string | undefined;
  readonly model: string;
  readonly stream: boolean;
  /** The forced function, or null for a plain completion. */
  readonly function: string | null;
  readonly user: string;
}

interface ChatBody {
  model: string;
  stream?: boolean;
  messages: { role: string; content: string }[];
  tools?: unknown[];
  tool_choice?: { function: { name: string } } | string;
}

/** One call of a tool plan: its arguments, or a function of the results the plan's calls had so far. */
export interface PlannedCall {
  readonly name: string;
  readonly arguments: unknown | ((results: unknown[]) => unknown);
}

export interface ChatCompletionsServer {
  readonly baseURL: string;
  readonly seen: SeenRequest[];
  /** The extraction answered for a user message (exactly as sent). */
  readonly extractions: Map<string, unknown>;
  /** The tool calls asked for, in order, when a user message (exactly as sent) comes with tools. */
  readonly toolPlans: Map<string, PlannedCall[]>;
  failing: boolean;
  stop(): Promise<void>;
  start(): Promise<void>;
}

const NOTHING = { intent: null, answer: null, cancel: false, another: false, slots: {} };

function toolMessage(name: string, args: unknown, id = 'call_1') {
  return {
    role: 'assistant',
    content: null,
    tool_calls: [{ id, type: 'function', function: { name, arguments: JSON.stringify(args) } }],
  };
}

/** The answer to a call that offers tools: the plan's next call, or the text once the plan is done. */
function planned(body: ChatBody, plans: Map<string, PlannedCall[]>) {
  const lastUser = body.messages.map((m) => m.role).lastIndexOf('user');
  const request = body.messages[lastUser]?.content ?? '';
  const results = body.messages.slice(lastUser + 1).flatMap((m) => {
    if (m.role !== 'tool') return [];
    return [JSON.parse(m.content) as unknown];
  });
  const plan = plans.get(request);
  if (plan === undefined) return { role: 'assistant', content: `«${body.model}» no tool needed` };
  const next = plan[results.length];
  if (next === undefined) {
    return { role: 'assistant', content: `«${body.model}» done: ${JSON.stringify(results.at(-1) ?? null)}` };
  }
  const args = typeof next.arguments === 'function' ? next.arguments(results) : next.arguments;
  return toolMessage(next.name, args, `call_${results.length}`);
}

/** The message as chunks of a stream: content and arguments cut in pieces of 7 characters. */
function chunks(message: ReturnType<typeof toolMessage> | { role: string; content: string }): unknown[] {
  const pieces = (text: string) => text.match(/[\s\S]{1,7}/g) ?? [''];
  const out: unknown[] = [{ choices: [{ index: 0, delta: { role: 'assistant' } }] }];
  if (typeof message.content === 'string') {
    for (const piece of pieces(message.content))
      out.push({ choices: [{ index: 0, delta: { content: piece } }] });
  }
  const call = 'tool_calls' in message ? message.tool_calls[0] : undefined;
  if (call !== undefined) {
    out.push({
      choices: [
        {
          index: 0,
          delta: {
            tool_calls: [
              {
                index: 0,
                id: call.id,
                type: 'function',
                function: { name: call.function.name, arguments: '' },
              },
            ],
          },
        },
      ],
    });
    for (const piece of pieces(call.function.arguments)) {
      out.push({
        choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: piece } }] } }],
      });
    }
  }
  out.push({ choices: [{ index: 0, delta: {}, finish_reason: call ? 'tool_calls' : 'stop' }] });
  return out;
}

export async function startChatCompletionsServer(): Promise<ChatCompletionsServer> {
  const seen: SeenRequest[] = [];
  const extractions = new Map<string, unknown>();
  const toolPlans = new Map<string, PlannedCall[]>();
  let port = 0;
  let server: Server | null = null;

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    let raw = '';
    for await (const chunk of req) raw += chunk;
    if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"no such route"}}');
      return;
    }
    const body = JSON.parse(raw) as ChatBody;
    const user = body.messages.at(-1)?.content ?? '';
    const fn = typeof body.tool_choice === 'object' ? body.tool_choice.function.name : null;
    seen.push({
      auth: req.headers.authorization,
      model: body.model,
      stream: body.stream === true,
      function: fn,
      user,
    });
    if (api.failing) {
      const error = { message: `Incorrect API key provided: ${req.headers.authorization ?? 'none'}` };
      res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error }));
      return;
    }
    const message =
      fn === null && body.tool_choice === 'auto'
        ? planned(body, toolPlans)
        : fn === 'extract'
          ? toolMessage('extract', extractions.get(user) ?? NOTHING)
          : fn === 'route'
            ? toolMessage('route', { task_id: null, new_task_type: null, reason: 'scripted' })
            : {
                role: 'assistant',
                content: `«${body.model}» ${/Draft reply: ([\s\S]*)$/.exec(user)?.[1] ?? ''}`,
              };
    if (body.stream === true) {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (const chunk of chunks(message)) res.write(`data: ${JSON.stringify(chunk)}\n\n`);
      res.end('data: [DONE]\n\n');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(
      JSON.stringify({
        id: 'chatcmpl-test',
        object: 'chat.completion',
        model: body.model,
        choices: [{ index: 0, message, finish_reason: 'tool_calls' in message ? 'tool_calls' : 'stop' }],
      }),
    );
  };

  const api: ChatCompletionsServer = {
    baseURL: '',
    seen,
    extractions,
    toolPlans,
    failing: false,
    async start() {
      server = createServer((req, res) => void handle(req, res));
      server.listen(port, '127.0.0.1');
      await once(server, 'listening');
      port = (server.address() as AddressInfo).port;
      (api as { baseURL: string }).baseURL = `http://127.0.0.1:${port}/v1`;
    },
    async stop() {
      const running = server;
      server = null;
      if (running === null) return;
      running.closeAllConnections();
      await new Promise<void>((resolve) => running.close(() => resolve()));
    },
  };
  await api.start();
  return api;
}
