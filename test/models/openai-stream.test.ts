/**
 * The openai model's streamed reply, against a local HTTP server that speaks the Chat Completions
 * streaming protocol (server-sent events) at its own pace: pieces are handed to `onDelta` as they arrive
 * (the server waits to see each one before it writes the next), their concatenation is the reply, a
 * server that answers plain JSON still works, and a broken, malformed or failed stream is an
 * upstream_unavailable error that names the endpoint and never the key. The incremental SSE reader is
 * also fed a stream split at every byte.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { trace } from '@opentelemetry/api';
import { node, tracing } from '@opentelemetry/sdk-node';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { isAgentStateError } from '../../src/core/errors.js';
import { createOpenAIModel, type OpenAIModelOptions } from '../../src/models/openai/index.js';
import { readChatStream, serverSentEvents } from '../../src/models/openai/stream.js';
import { modelCall } from '../../src/runtime/model-call.js';

type Handler = (res: ServerResponse) => Promise<void> | void;

interface SeenBody {
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  messages: { role: string; content: string }[];
}

const KEY = 'sk-stream-secret-key-7';
let server: Server;
let baseURL: string;
const seen: SeenBody[] = [];
const handlers: Handler[] = [];

async function handle(req: IncomingMessage, res: ServerResponse) {
  let raw = '';
  for await (const chunk of req) raw += chunk;
  seen.push(JSON.parse(raw) as SeenBody);
  const handler = handlers.shift();
  if (handler === undefined) {
    res
      .writeHead(500, { 'content-type': 'application/json' })
      .end('{"error":{"message":"no answer scripted"}}');
    return;
  }
  await handler(res);
}

beforeAll(async () => {
  server = createServer((req, res) => void handle(req, res));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  baseURL = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});
beforeEach(() => {
  seen.length = 0;
  handlers.length = 0;
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const sse = (chunk: unknown) => `data: ${JSON.stringify(chunk)}\n\n`;
const role = { model: 'tiny-2025', choices: [{ index: 0, delta: { role: 'assistant' } }] };
const piece = (content: string) => ({ model: 'tiny-2025', choices: [{ index: 0, delta: { content } }] });
const stop = { model: 'tiny-2025', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] };

/** Polls until `ready` holds; false when it did not within `ms`. */
async function waitFor(ready: () => boolean, ms = 2_000): Promise<boolean> {
  const until = Date.now() + ms;
  while (!ready()) {
    if (Date.now() > until) return false;
    await sleep(2);
  }
  return true;
}

const model = (overrides: Partial<OpenAIModelOptions> = {}) =>
  createOpenAIModel({ baseURL, apiKey: KEY, model: 'tiny', backoffMs: 5, timeoutMs: 2_000, ...overrides });
const ask = { input: 'Beijing to Shanghai', language: 'en' as const, draft: 'Which cabin?', task: null };

/** The error a call rejects with. */
const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => {
      throw new Error('expected a rejection');
    },
    (error: unknown) => error as Error,
  );

describe('the openai model streams its reply', () => {
  it('hands on each piece as it arrives, in order; the pieces joined are the reply', async () => {
    const pieces = [' Great,', ' Beijing', ' to 上海 ✈', ' on 9 December. '];
    const deltas: { text: string; written: number; ended: boolean }[] = [];
    let written = 0;
    let ended = false;
    const inTime: boolean[] = [];
    handlers.push(async (res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(sse(role));
      for (const [i, text] of pieces.entries()) {
        res.write(sse(piece(text)));
        written = i + 1;
        // The next piece is written only once the client has handed this one on.
        inTime.push(await waitFor(() => deltas.length === i + 1));
      }
      res.write(sse(stop));
      ended = true;
      res.end('data: [DONE]\n\n');
    });
    const reply = await model().reply({
      ...ask,
      onDelta: (text) => deltas.push({ text, written, ended }),
    });
    expect(inTime).toEqual([true, true, true, true]);
    expect(deltas).toEqual(pieces.map((text, i) => ({ text, written: i + 1, ended: false })));
    expect(deltas.map((d) => d.text).join('')).toBe(pieces.join(''));
    expect(reply).toBe(pieces.join('').trim());
    expect(seen[0]?.stream).toBe(true);
    expect(seen[0]?.stream_options).toEqual({ include_usage: true });
  });

  it('reads CRLF lines, comments and characters split across writes at any byte', async () => {
    const text = [
      ': keep-alive',
      ...[role, piece('飞往'), piece('上海 🛫'), piece(' ok'), stop].map((c) => `data: ${JSON.stringify(c)}`),
      'data: [DONE]',
    ]
      .map((line) => `${line}\r\n\r\n`)
      .join('');
    const bytes = Buffer.from(text, 'utf8');
    handlers.push(async (res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8' });
      for (let at = 0; at < bytes.length; at += 5) {
        res.write(bytes.subarray(at, at + 5));
        await sleep(1);
      }
      res.end();
    });
    const deltas: string[] = [];
    const reply = await model().reply({ ...ask, onDelta: (d) => deltas.push(d) });
    expect(deltas).toEqual(['飞往', '上海 🛫', ' ok']);
    expect(reply).toBe('飞往上海 🛫 ok');
  });

  it('works with a server that ignores stream: true and answers plain JSON', async () => {
    handlers.push((res) => {
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          choices: [
            { index: 0, finish_reason: 'stop', message: { role: 'assistant', content: ' All of it. ' } },
          ],
        }),
      );
    });
    const deltas: string[] = [];
    expect(await model().reply({ ...ask, onDelta: (d) => deltas.push(d) })).toBe('All of it.');
    expect(deltas).toEqual([' All of it. ']);
    expect(seen[0]?.stream).toBe(true);
  });

  it('falls back to the draft, handed on once, when the stream says nothing', async () => {
    handlers.push((res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(`${sse(role)}${sse(stop)}data: [DONE]\n\n`);
    });
    const deltas: string[] = [];
    expect(await model().reply({ ...ask, onDelta: (d) => deltas.push(d) })).toBe('Which cabin?');
    expect(deltas).toEqual(['Which cabin?']);
  });

  it('does not stream without onDelta', async () => {
    handlers.push((res) => {
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ choices: [{ index: 0, message: { role: 'assistant', content: 'plain' } }] }));
    });
    expect(await model().reply(ask)).toBe('plain');
    expect(seen[0]?.stream).toBeUndefined();
    expect(seen[0]?.stream_options).toBeUndefined();
  });

  it('a stream cut mid-way is upstream_unavailable, naming the endpoint, not retried once pieces went out', async () => {
    const deltas: string[] = [];
    handlers.push(async (res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(sse(role) + sse(piece('Half')) + sse(piece(' a')));
      await waitFor(() => deltas.length === 2);
      res.socket?.destroy();
    });
    const error = await failure(model().reply({ ...ask, onDelta: (d) => deltas.push(d) }));
    expect(isAgentStateError(error, 'upstream_unavailable')).toBe(true);
    expect(error.message).toContain(`[openai] ${baseURL}/chat/completions: the stream broke off`);
    expect(error.message).not.toContain(KEY);
    expect(deltas).toEqual(['Half', ' a']);
    expect(seen).toHaveLength(1);
  });

  it('a stream cut before any piece is tried again', async () => {
    handlers.push((res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(sse(role));
      setTimeout(() => res.socket?.destroy(), 20);
    });
    handlers.push((res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(`${sse(role)}${sse(piece('Second'))}${sse(piece(' time'))}${sse(stop)}data: [DONE]\n\n`);
    });
    const deltas: string[] = [];
    expect(await model().reply({ ...ask, onDelta: (d) => deltas.push(d) })).toBe('Second time');
    expect(deltas).toEqual(['Second', ' time']);
    expect(seen).toHaveLength(2);
  });

  it('a malformed chunk is upstream_unavailable, with the key cut out', async () => {
    handlers.push((res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(`${sse(role)}${sse(piece('Hi'))}data: {"choices": ${KEY}\n\n`);
    });
    const deltas: string[] = [];
    const error = await failure(model().reply({ ...ask, onDelta: (d) => deltas.push(d) }));
    expect(isAgentStateError(error, 'upstream_unavailable')).toBe(true);
    expect(error.message).toContain(`${baseURL}/chat/completions answered with a chunk that is not JSON`);
    expect(error.message).toContain('[redacted]');
    expect(error.message).not.toContain(KEY);
    expect(deltas).toEqual(['Hi']);
    expect(seen).toHaveLength(1);
  });

  it('an error sent in the stream, or a stream that ends unfinished, is upstream_unavailable', async () => {
    handlers.push((res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(`${sse({ error: { message: `overloaded, key ${KEY}` } })}`);
    });
    const failed = await failure(model({ maxRetries: 0 }).reply({ ...ask, onDelta: () => undefined }));
    expect(isAgentStateError(failed, 'upstream_unavailable')).toBe(true);
    expect(failed.message).toContain('answered an error in the stream: overloaded, key [redacted]');
    handlers.push((res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(`${sse(role)}${sse(piece('So far'))}`);
    });
    const unfinished = await failure(model({ maxRetries: 0 }).reply({ ...ask, onDelta: () => undefined }));
    expect(isAgentStateError(unfinished, 'upstream_unavailable')).toBe(true);
    expect(unfinished.message).toContain('the stream ended before it was finished');
  });

  it('an HTTP error to a stream request is the same upstream_unavailable error', async () => {
    handlers.push((res) => {
      res
        .writeHead(401, { 'content-type': 'application/json' })
        .end(JSON.stringify({ error: { message: `Incorrect API key provided: ${KEY}` } }));
    });
    const error = await failure(model().reply({ ...ask, onDelta: () => undefined }));
    expect(isAgentStateError(error, 'upstream_unavailable')).toBe(true);
    expect(error.message).toBe(
      `[openai] ${baseURL}/chat/completions answered 401: Incorrect API key provided: [redacted]`,
    );
    expect(seen).toHaveLength(1);
  });

  it('waits up to timeoutMs for each next piece, not for the whole reply', async () => {
    handlers.push(async (res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(sse(role));
      for (const text of ['a', 'b', 'c', 'd', 'e']) {
        await sleep(400);
        res.write(sse(piece(text)));
      }
      res.end(`${sse(stop)}data: [DONE]\n\n`);
    });
    // 2 s in all, each piece 0.4 s after the last: a loaded machine's stall of the test server stays well
    // under the 1.2 s a piece may take.
    expect(await model({ timeoutMs: 1_200 }).reply({ ...ask, onDelta: () => undefined })).toBe('abcde');
    handlers.push(async (res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(sse(role) + sse(piece('stalled')));
      await sleep(3_000);
      if (!res.destroyed) res.end();
    });
    const error = await failure(model({ timeoutMs: 1_200 }).reply({ ...ask, onDelta: () => undefined }));
    expect(isAgentStateError(error, 'upstream_unavailable')).toBe(true);
    expect(error.message).toContain('the stream stopped: no data within 1200 ms');
  });
});

describe('the incremental SSE reader', () => {
  const bodyOf = (bytes: Uint8Array, cuts: readonly number[]) =>
    new ReadableStream<Uint8Array>({
      start(controller) {
        let from = 0;
        for (const cut of [...cuts, bytes.length]) {
          controller.enqueue(bytes.slice(from, cut));
          from = cut;
        }
        controller.close();
      },
    });

  it('gives the same events whichever byte a chunk ends at, with CRLF, LF or CR line ends', async () => {
    const text =
      ': comment\r\ndata: {"a":"é"}\r\n\r\nevent: x\ndata: line 1\ndata:line 2\n\ndata: 中文 🙂\r\rdata: [DONE]\r\n\r\n';
    const bytes = new TextEncoder().encode(text);
    const expected = ['{"a":"é"}', 'line 1\nline 2', '中文 🙂', '[DONE]'];
    const read = async (cuts: number[]) => {
      const out: string[] = [];
      for await (const data of serverSentEvents(bodyOf(bytes, cuts))) out.push(data);
      return out;
    };
    for (let at = 1; at < bytes.length; at++) expect(await read([at])).toEqual(expected);
    expect(await read(Array.from({ length: bytes.length - 1 }, (_, i) => i + 1))).toEqual(expected);
  });

  it('reads chunks up to [DONE] and puts usage, model and finish reason together', async () => {
    const text = `${sse(role)}${sse(piece('Hel'))}${sse(piece('lo'))}${sse(stop)}${sse({
      model: 'tiny-2025',
      choices: [],
      usage: { prompt_tokens: 5, completion_tokens: 2 },
    })}data: [DONE]\n\n`;
    const bytes = new TextEncoder().encode(text);
    for (const at of [1, 7, 40, bytes.length - 3]) {
      const pieces: string[] = [];
      const answer = await readChatStream(bodyOf(bytes, [at]), (p) => pieces.push(p));
      expect(pieces).toEqual(['Hel', 'lo']);
      expect(answer).toEqual({
        message: { content: 'Hello' },
        model: 'tiny-2025',
        usage: { prompt_tokens: 5, completion_tokens: 2 },
        finish_reason: 'stop',
      });
    }
  });
});

describe('a streamed reply on a trace', () => {
  const exporter = new tracing.InMemorySpanExporter();
  let provider: node.NodeTracerProvider;
  beforeAll(() => {
    provider = new node.NodeTracerProvider({ spanProcessors: [new tracing.SimpleSpanProcessor(exporter)] });
    provider.register();
  });
  afterAll(async () => {
    await provider.shutdown();
    trace.disable();
  });

  it('records usage from the last chunk, the model and the finish reason', async () => {
    exporter.reset();
    handlers.push((res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(sse(role) + sse(piece('Hi')) + sse(stop));
      res.write(
        sse({
          model: 'tiny-2025',
          choices: [],
          usage: { prompt_tokens: 42, completion_tokens: 7, total_tokens: 49 },
        }),
      );
      res.end('data: [DONE]\n\n');
    });
    const m = model({ name: 'openai' });
    expect(await modelCall(m, 'reply', () => m.reply({ ...ask, onDelta: () => undefined }))).toBe('Hi');
    const [span] = exporter.getFinishedSpans();
    expect(span?.attributes).toMatchObject({
      'gen_ai.request.model': 'tiny',
      'gen_ai.response.model': 'tiny-2025',
      'gen_ai.usage.input_tokens': 42,
      'gen_ai.usage.output_tokens': 7,
      'gen_ai.response.finish_reasons': ['stop'],
    });
  });

  it('records no usage when the stream carries none', async () => {
    exporter.reset();
    handlers.push((res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(`${sse(role)}${sse(piece('Hi'))}${sse(stop)}data: [DONE]\n\n`);
    });
    const m = model({ name: 'openai' });
    await modelCall(m, 'reply', () => m.reply({ ...ask, onDelta: () => undefined }));
    const [span] = exporter.getFinishedSpans();
    expect(span?.attributes['gen_ai.response.finish_reasons']).toEqual(['stop']);
    expect(span?.attributes['gen_ai.usage.input_tokens']).toBeUndefined();
  });
});
