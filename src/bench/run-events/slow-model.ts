/**
 * A local Chat Completions server (`POST /v1/chat/completions`) whose replies stream slowly: what makes a
 * run last long enough to leave it, kill it or follow it while it streams. Extraction (a forced `extract`
 * call) finds nothing, routing (`route`) opens no task; any other call is the reply: `«model» draft`
 * followed by `filler` words up to `replyChars` characters, sent in pieces of `pieceChars` characters,
 * one every `pieceMs` ms (`stream: true`), or at once (not streamed). `firstPieceAt` is told the
 * `performance.now()` of each reply's first piece of content, as it is written; while `gate` is set,
 * streamed replies wait for it before their first piece (runs kept open as long as a test needs).
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface SlowModelOptions {
  /** Characters of a reply (the draft, then filler words). Default 120. */
  replyChars?: number;
  /** Characters per streamed piece. Default 4. */
  pieceChars?: number;
  /** Milliseconds between streamed pieces. Default 20. */
  pieceMs?: number;
  /** Milliseconds before a reply's first piece. Default 0. */
  firstPieceMs?: number;
}

export interface SlowModel {
  readonly baseURL: string;
  /** Changed between turns as a test needs. */
  readonly options: Required<SlowModelOptions>;
  /** Reply requests answered so far (counted when they arrive). */
  replies: number;
  /** Told when a reply's first piece of content is written: performance.now(). */
  firstPieceAt: ((at: number) => void) | null;
  /** While set, a reply waits for it before its first piece (its headers are sent). */
  gate: Promise<void> | null;
  stop(): Promise<void>;
}

const NOTHING = { intent: null, answer: null, cancel: false, another: false, slots: {} };
const FILLER = 'and the rest of this reply streams slowly, one small piece at a time';

interface ChatBody {
  model: string;
  stream?: boolean;
  messages: { role: string; content: string }[];
  tool_choice?: { function: { name: string } };
}

function toolAnswer(name: string, args: unknown) {
  const call = { id: 'call_1', type: 'function', function: { name, arguments: JSON.stringify(args) } };
  return { role: 'assistant', content: null, tool_calls: [call] };
}

/** The reply: the draft marked with the model, then filler words to `chars` (no blank at either end). */
export function slowReply(model: string, draft: string, chars: number): string {
  let text = `«${model}» ${draft}`.trim();
  while (text.length < chars) text += ` ${FILLER}`;
  return text.slice(0, Math.max(chars, `«${model}» ${draft}`.trim().length)).trim();
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function startSlowModel(given: SlowModelOptions = {}): Promise<SlowModel> {
  const options: Required<SlowModelOptions> = {
    replyChars: given.replyChars ?? 120,
    pieceChars: given.pieceChars ?? 4,
    pieceMs: given.pieceMs ?? 20,
    firstPieceMs: given.firstPieceMs ?? 0,
  };
  const sse = (res: ServerResponse, chunk: unknown) => res.write(`data: ${JSON.stringify(chunk)}\n\n`);
  const delta = (d: object, finish: string | null = null) => ({
    object: 'chat.completion.chunk',
    choices: [{ index: 0, delta: d, finish_reason: finish }],
  });

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    let raw = '';
    for await (const chunk of req) raw += chunk;
    if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"no such route"}}');
      return;
    }
    const body = JSON.parse(raw) as ChatBody;
    const fn = body.tool_choice?.function.name ?? null;
    if (fn !== null) {
      const message =
        fn === 'extract'
          ? toolAnswer('extract', NOTHING)
          : toolAnswer('route', { task_id: null, new_task_type: null, reason: 'scripted' });
      if (body.stream === true) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        sse(res, delta(message));
        sse(res, delta({}, 'tool_calls'));
        res.end('data: [DONE]\n\n');
        return;
      }
      const answer = { model: body.model, choices: [{ index: 0, message, finish_reason: 'tool_calls' }] };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(answer));
      return;
    }
    model.replies++;
    const user = body.messages.at(-1)?.content ?? '';
    const draft = /Draft reply: ([\s\S]*)$/.exec(user)?.[1] ?? '';
    const text = slowReply(body.model, draft, options.replyChars);
    if (body.stream !== true) {
      const message = { role: 'assistant', content: text };
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ model: body.model, choices: [{ index: 0, message, finish_reason: 'stop' }] }));
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    sse(res, delta({ role: 'assistant' }));
    if (model.gate !== null) await model.gate;
    if (options.firstPieceMs > 0) await sleep(options.firstPieceMs);
    let gone = false;
    res.on('close', () => {
      gone = true;
    });
    for (let at = 0; at < text.length && !gone; at += options.pieceChars) {
      if (at > 0 && options.pieceMs > 0) await sleep(options.pieceMs);
      sse(res, delta({ content: text.slice(at, at + options.pieceChars) }));
      if (at === 0) model.firstPieceAt?.(performance.now());
    }
    sse(res, delta({}, 'stop'));
    res.end('data: [DONE]\n\n');
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch(() => res.destroy());
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  const model: SlowModel = {
    baseURL: `http://127.0.0.1:${port}/v1`,
    options,
    replies: 0,
    firstPieceAt: null,
    gate: null,
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return model;
}
