/** The openai adapter against a local HTTP server that speaks the Chat Completions protocol. */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { flightBookingAgent } from '../../src/agents/index.js';
import { isAgentStateError } from '../../src/core/errors.js';
import { createOpenAIModel } from '../../src/models/openai/index.js';
import { createModelRegistry } from '../../src/models/types.js';
import { taskTypeInfo } from '../../src/runtime/task-type.js';
import { runTurn } from '../../src/runtime/turn.js';
import { createMemoryStore } from '../../src/store/memory/index.js';
import { ledgerTools } from '../runtime/ledger-tools.js';
import { freshScope, runtimeOptions, tempDir } from '../runtime/setup.js';

interface Seen {
  readonly auth: string | undefined;
  readonly body: {
    model: string;
    messages: { role: string; content: string }[];
    tools?: { function: { name: string; parameters: { properties: Record<string, unknown> } } }[];
    tool_choice?: { function: { name: string } };
  };
}

type Answer = { status?: number; headers?: Record<string, string>; delayMs?: number; body: unknown };

let server: Server;
let baseURL: string;
const seen: Seen[] = [];
const answers: Answer[] = [];

function toolAnswer(name: string, args: unknown): Answer {
  const text = typeof args === 'string' ? args : JSON.stringify(args);
  return {
    body: {
      id: 'chatcmpl-1',
      object: 'chat.completion',
      choices: [
        {
          index: 0,
          finish_reason: 'tool_calls',
          message: {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'call_1', type: 'function', function: { name, arguments: text } }],
          },
        },
      ],
    },
  };
}

function textAnswer(content: string): Answer {
  return {
    body: {
      id: 'chatcmpl-2',
      object: 'chat.completion',
      choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content } }],
    },
  };
}

async function handle(req: IncomingMessage, res: ServerResponse) {
  let raw = '';
  for await (const chunk of req) raw += chunk;
  if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
    res
      .writeHead(404, { 'content-type': 'application/json' })
      .end(JSON.stringify({ error: { message: 'no such route' } }));
    return;
  }
  seen.push({ auth: req.headers.authorization, body: JSON.parse(raw) as Seen['body'] });
  const answer = answers.shift() ?? { status: 500, body: { error: { message: 'no answer scripted' } } };
  if (answer.delayMs !== undefined) await new Promise((resolve) => setTimeout(resolve, answer.delayMs));
  if (res.destroyed) return;
  res.writeHead(answer.status ?? 200, { 'content-type': 'application/json', ...answer.headers });
  res.end(JSON.stringify(answer.body));
}

beforeAll(async () => {
  server = createServer((req, res) => void handle(req, res));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  baseURL = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});
afterAll(async () => {
  server.closeAllConnections();
  server.close();
});
beforeEach(() => {
  seen.length = 0;
  answers.length = 0;
});

const types = [taskTypeInfo(flightBookingAgent.taskTypes[0]!)];
const request = {
  input: 'Book me a flight from Beijing to Shanghai',
  taskTypes: types,
  expecting: null,
  now: '2026-12-01T20:00:00.000Z',
  timezone: 'Asia/Shanghai',
  language: 'en' as const,
};
const model = () =>
  createOpenAIModel({ baseURL, apiKey: 'sk-test', model: 'test-model', backoffMs: 5, timeoutMs: 2_000 });

describe('openai model', () => {
  it('extracts with a forced function call whose parameters are a JSON Schema of the slots', async () => {
    answers.push(
      toolAnswer('extract', {
        intent: 'flight_booking',
        answer: null,
        cancel: false,
        another: false,
        slots: {
          flight_booking: {
            origin: 'BJS',
            destination: 'SHA',
            date: null,
            cabin_class: null,
            passenger_name: null,
          },
        },
      }),
    );
    const found = await model().extract(request);
    expect(found).toEqual({
      intent: 'flight_booking',
      slots: { flight_booking: { origin: 'BJS', destination: 'SHA' } },
      answer: null,
      cancel: false,
      another: false,
    });
    const sent = seen[0]!;
    expect(sent.auth).toBe('Bearer sk-test');
    expect(sent.body.model).toBe('test-model');
    expect(sent.body.tool_choice?.function.name).toBe('extract');
    const slots = sent.body.tools?.[0]?.function.parameters.properties.slots as {
      properties: Record<string, { properties: object }>;
    };
    expect(Object.keys(slots.properties.flight_booking!.properties)).toEqual([
      'origin',
      'destination',
      'date',
      'cabin_class',
      'passenger_name',
    ]);
    expect(sent.body.messages[0]?.content).toContain('Asia/Shanghai');
    expect(sent.body.messages[1]).toEqual({ role: 'user', content: request.input });
  });

  it('routes and replies', async () => {
    answers.push(
      toolAnswer('route', { task_id: 'task_x', new_task_type: null, reason: 'it names Shanghai' }),
    );
    answers.push(textAnswer('Sure! Where are you flying from?'));
    const m = model();
    const decision = await m.route({
      input: 'that one',
      extraction: { intent: null, slots: {}, answer: null, cancel: false, another: false },
      tasks: [],
      taskTypes: types,
    });
    expect(decision).toEqual({ task_id: 'task_x', new_task_type: null, reason: 'it names Shanghai' });
    expect(
      await m.reply({ input: 'hi', language: 'en', draft: 'Where are you flying from?', task: null }),
    ).toBe('Sure! Where are you flying from?');
  });

  it('retries 503 and 429 (Retry-After) with backoff, then succeeds', async () => {
    answers.push({ status: 503, body: { error: { message: 'overloaded' } } });
    answers.push({ status: 429, headers: { 'retry-after': '0' }, body: { error: { message: 'slow down' } } });
    answers.push(textAnswer('ok'));
    expect(await model().reply({ input: 'x', language: 'en', draft: 'd', task: null })).toBe('ok');
    expect(seen).toHaveLength(3);
  });

  it('does not retry a 401 and says why', async () => {
    answers.push({ status: 401, body: { error: { message: 'Incorrect API key provided' } } });
    const error = await model()
      .reply({ input: 'x', language: 'en', draft: 'd', task: null })
      .catch((e: unknown) => e);
    expect(isAgentStateError(error)).toBe(true);
    expect((error as Error).message).toMatch(
      /\[openai\] .*chat\/completions answered 401: Incorrect API key provided/,
    );
    expect(seen).toHaveLength(1);
  });

  it('times out each attempt and gives up after the retries', async () => {
    answers.push({ delayMs: 400, body: {} }, { delayMs: 400, body: {} });
    const slow = createOpenAIModel({ baseURL, model: 'm', timeoutMs: 100, maxRetries: 1, backoffMs: 1 });
    const error = await slow
      .reply({ input: 'x', language: 'en', draft: 'd', task: null })
      .catch((e: unknown) => e);
    expect((error as Error).message).toContain('no answer within 100 ms (attempt 2 of 2)');
    expect(seen).toHaveLength(2);
  });

  it('refuses answers that are not JSON or do not match the schema', async () => {
    answers.push(toolAnswer('extract', '{not json'));
    await expect(model().extract(request)).rejects.toThrow(/the answer to extract is not JSON/);
    answers.push(toolAnswer('extract', { answer: 'maybe', slots: {} }));
    await expect(model().extract(request)).rejects.toThrow(/does not match its schema/);
  });

  it('drives a turn: the model’s extraction fills the slots and its wording is the reply', async () => {
    const temp = tempDir();
    const store = createMemoryStore();
    const scope = freshScope();
    const session = await store.createSession(scope, { agent: 'flight_booking' });
    answers.push(
      toolAnswer('extract', {
        intent: 'flight_booking',
        answer: null,
        cancel: false,
        another: false,
        slots: { flight_booking: { origin: 'BJS', destination: 'SHA', date: '2026-12-09' } },
      }),
      textAnswer('Great, Beijing to Shanghai on 9 December. Which cabin: economy, business or first?'),
    );
    const out = await runTurn({
      ...runtimeOptions(store, scope, session.id, ledgerTools(join(temp.dir, 'l.jsonl'))),
      models: createModelRegistry([model()]),
      model: 'openai',
      input: 'Beijing to Shanghai next Wednesday',
    });
    expect(out.reply).toBe(
      'Great, Beijing to Shanghai on 9 December. Which cabin: economy, business or first?',
    );
    expect(out.tasks[0]?.status_line).toBe('Booking BJS -> SHA on 2026-12-09: waiting for cabin class');
    expect(seen.map((s) => s.body.tool_choice?.function.name ?? 'reply')).toEqual(['extract', 'reply']);
    expect(seen[1]?.body.messages[1]?.content).toContain(
      'Draft reply: Which cabin class: economy, business or first?',
    );
    temp.cleanup();
  });
});
