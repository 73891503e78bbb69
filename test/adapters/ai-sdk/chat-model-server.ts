/**
 * A local Chat Completions server (`POST /v1/chat/completions`, streamed) for chats, scripted on the last
 * message:
 *
 * - a tool result: `The tool said <result>.`;
 * - a user message "weather in <city>": a call of `get_weather` with `{ city }`;
 * - a user message "book flight <flight>": a call of `book_flight` with `{ flight }`;
 * - a user message with "long story": LONG_STORY;
 * - anything else: `You said: <text>`.
 *
 * Text is streamed in pieces of 7 characters. Like OpenAI, it answers 400 to a conversation with an
 * assistant tool call that no tool message answers (a dangling tool call). `hold(n)` pauses the next
 * answer after n pieces until released (a test's "mid-answer", without timing); `cut(n)` drops the
 * connection of the next answer after n pieces.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export const LONG_STORY = Array.from(
  { length: 24 },
  (_, i) => `Sentence ${i + 1} of the long story goes on a little.`,
).join(' ');

interface ChatMessage {
  role: string;
  content?: string | null | { type: string; text?: string }[];
  tool_calls?: { id: string; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
}

export interface Hold {
  /** Resolves once the answer is paused. */
  readonly reached: Promise<void>;
  release(): void;
}

export interface ChatModelServer {
  readonly baseURL: string;
  /** Every request's messages, in order. */
  readonly requests: ChatMessage[][];
  /** Requests answered 400 for a dangling tool call. */
  readonly refused: number;
  hold(afterPieces: number): Hold;
  cut(afterPieces: number): void;
  close(): Promise<void>;
}

function textOf(message: ChatMessage | undefined): string {
  const content = message?.content;
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((part) => part.text ?? '').join('');
  return '';
}

/** The ids of assistant tool calls no later tool message answers. */
function danglingCalls(messages: ChatMessage[]): string[] {
  const answered = new Set(messages.filter((m) => m.role === 'tool').map((m) => m.tool_call_id));
  return messages.flatMap((m) => (m.tool_calls ?? []).map((c) => c.id)).filter((id) => !answered.has(id));
}

function pieces(text: string): string[] {
  return text.match(/[\s\S]{1,7}/g) ?? [''];
}

type Delta = Record<string, unknown>;

function answerFor(messages: ChatMessage[], callNo: number): { deltas: Delta[]; finish: string } {
  const last = messages.at(-1);
  if (last?.role === 'tool')
    return { deltas: pieces(`The tool said ${textOf(last)}.`).map((p) => ({ content: p })), finish: 'stop' };
  const text = textOf(last);
  const weather = /weather in (\w+)/i.exec(text);
  const booking = /book flight (\w+)/i.exec(text);
  const call =
    weather !== null
      ? { name: 'get_weather', args: JSON.stringify({ city: weather[1] }) }
      : booking !== null
        ? { name: 'book_flight', args: JSON.stringify({ flight: booking[1] }) }
        : null;
  if (call !== null) {
    const { name, args } = call;
    const id = `call_${callNo}`;
    return {
      deltas: [
        {
          tool_calls: [{ index: 0, id, type: 'function', function: { name, arguments: '' } }],
        },
        ...pieces(args).map((p) => ({ tool_calls: [{ index: 0, function: { arguments: p } }] })),
      ],
      finish: 'tool_calls',
    };
  }
  const answer = /long story/i.test(text) ? LONG_STORY : `You said: ${text}`;
  return { deltas: pieces(answer).map((p) => ({ content: p })), finish: 'stop' };
}

export async function startChatModelServer(): Promise<ChatModelServer> {
  const requests: ChatMessage[][] = [];
  let refused = 0;
  let held: { after: number; reached: () => void; gate: Promise<void> } | null = null;
  let cutAfter: number | null = null;

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    let raw = '';
    for await (const chunk of req) raw += chunk;
    if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"no such route"}}');
      return;
    }
    const body = JSON.parse(raw) as { model: string; messages: ChatMessage[] };
    requests.push(body.messages);
    const dangling = danglingCalls(body.messages);
    if (dangling.length > 0) {
      refused++;
      const message = `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${dangling.join(', ')}`;
      res
        .writeHead(400, { 'content-type': 'application/json' })
        .end(JSON.stringify({ error: { message, type: 'invalid_request_error' } }));
      return;
    }
    const { deltas, finish } = answerFor(body.messages, requests.length);
    const hold = held;
    held = null;
    const cut = cutAfter;
    cutAfter = null;
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const send = (delta: Delta, finishReason: string | null = null) =>
      res.write(
        `data: ${JSON.stringify({ id: 'chatcmpl-chat', object: 'chat.completion.chunk', model: body.model, choices: [{ index: 0, delta, finish_reason: finishReason }] })}\n\n`,
      );
    send({ role: 'assistant' });
    for (const [i, delta] of deltas.entries()) {
      if (cut !== null && i === cut) {
        res.destroy();
        return;
      }
      if (hold !== null && i === hold.after) {
        hold.reached();
        await hold.gate;
      }
      send(delta);
      // One piece per turn of the event loop: a client sees the answer grow.
      await new Promise((resolve) => setImmediate(resolve));
    }
    send({}, finish);
    res.end('data: [DONE]\n\n');
  };

  const server = createServer((req, res) => {
    handle(req, res).catch(() => res.destroy());
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    requests,
    get refused() {
      return refused;
    },
    hold(after) {
      let reached!: () => void;
      let release!: () => void;
      const reachedP = new Promise<void>((resolve) => {
        reached = resolve;
      });
      const gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      held = { after, reached, gate };
      return { reached: reachedP, release };
    },
    cut(after) {
      cutAfter = after;
    },
    async close() {
      held = null;
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
