/**
 * Spans in process, with a tracer provider registered by the test: a model call to an OpenAI-compatible
 * endpoint carries the GenAI attributes of its answer (usage, finish reason, models; no content), and a store
 * made while the provider is registered puts each call in a db.* span, while one made before has none; a
 * durable run taken over from an attempt that stopped inside an action links to that attempt.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { trace } from '@opentelemetry/api';
import { node, tracing } from '@opentelemetry/sdk-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { durableRun } from '../../src/durable/index.js';
import { chatCompletion, createOpenAIModel } from '../../src/models/openai/index.js';
import { modelCall } from '../../src/runtime/model-call.js';
import { createMemoryStore } from '../../src/store/memory/index.js';

const exporter = new tracing.InMemorySpanExporter();
let provider: node.NodeTracerProvider;
let endpoint: Server;
let baseURL: string;
const before = createMemoryStore(); // made while no provider is registered

beforeAll(async () => {
  provider = new node.NodeTracerProvider({ spanProcessors: [new tracing.SimpleSpanProcessor(exporter)] });
  provider.register();
  endpoint = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          model: 'tiny-2025-01-01',
          usage: { prompt_tokens: 42, completion_tokens: 7, total_tokens: 49 },
          choices: [{ message: { role: 'assistant', content: 'a secret reply' }, finish_reason: 'stop' }],
        }),
      );
    });
  });
  await new Promise<void>((resolve) => endpoint.listen(0, '127.0.0.1', resolve));
  baseURL = `http://127.0.0.1:${(endpoint.address() as AddressInfo).port}/v1`;
});
afterAll(async () => {
  await provider?.shutdown();
  trace.disable();
  await new Promise((resolve) => endpoint?.close(resolve));
});

describe('spans in process', () => {
  it('a model call: gen_ai.* from the answer, no message content', async () => {
    exporter.reset();
    const model = createOpenAIModel({ baseURL, model: 'tiny', name: 'openai' });
    const message = await modelCall(model, 'reply', () =>
      chatCompletion(
        { baseURL, model: 'tiny' },
        { messages: [{ role: 'user', content: 'a secret question' }] },
      ),
    );
    expect(message.content).toBe('a secret reply');
    const [span] = exporter.getFinishedSpans();
    expect(span?.name).toBe('chat openai');
    expect(span?.attributes).toEqual({
      'gen_ai.operation.name': 'chat',
      'gen_ai.system': 'openai',
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': 'tiny',
      'gen_ai.response.model': 'tiny-2025-01-01',
      'gen_ai.usage.input_tokens': 42,
      'gen_ai.usage.output_tokens': 7,
      'gen_ai.response.finish_reasons': ['stop'],
      'agentstate.model.call': 'reply',
    });
  });

  it('store calls: a db.* span each on a store made under the provider, none on one made before', async () => {
    exporter.reset();
    const store = createMemoryStore();
    const scope = { tenant_id: 't1', user_id: 'u1' };
    const session = await store.createSession(scope, { agent: 'flight_booking' });
    await store.getSession(scope, session.id);
    await before.createSession(scope, {});
    const spans = exporter.getFinishedSpans();
    expect(spans.map((s) => s.name)).toEqual(['createSession memory', 'getSession memory']);
    expect(spans[1]?.attributes).toEqual({
      'db.system.name': 'agentstate.memory',
      'db.system': 'agentstate.memory',
      'db.operation.name': 'getSession',
      'agentstate.store': 'memory',
    });
    await expect(store.getSession(scope, 'not-an-id')).rejects.toThrow();
    const failed = exporter.getFinishedSpans().at(-1);
    expect(failed?.status.code).toBe(2); // ERROR
    expect(failed?.attributes['error.type']).toBe('invalid_request');
    await store.close();
    await before.close();
  });

  it('a durable run taken over after its attempt stopped inside an action links to that attempt', async () => {
    exporter.reset();
    const store = createMemoryStore();
    const scope = { tenant_id: 't2', user_id: 'u2' };
    const { id: sessionId } = await store.createSession(scope, {});
    const charged = new Set<string>();
    const program = (hang: boolean) => async (ctx: Parameters<Parameters<typeof durableRun>[2]>[0]) =>
      ctx.action(
        'charge',
        { amount: 30 },
        {
          // The first attempt charges, then never answers: a process that died inside the call.
          run: (key) => {
            charged.add(key);
            return hang ? new Promise<never>(() => undefined) : Promise.resolve({ receipt: key });
          },
          lookup: async (key) =>
            charged.has(key) ? { found: true, result: { receipt: key } } : { found: false },
        },
      );
    const options = (owner: string) => ({ scope, sessionId, lease: { owner, ttlMs: 200, waitMs: 3_000 } });
    void durableRun(store, options('first'), program(true));
    await new Promise((resolve) => setTimeout(resolve, 100));
    const second = await durableRun(store, options('second'), program(false));
    expect(second).toMatchObject({ status: 'done', resumed: true });

    const spans = exporter.getFinishedSpans();
    const checkpoint = (label: string) =>
      spans.find(
        (s) => s.name === 'agentstate.checkpoint' && s.attributes['agentstate.checkpoint.label'] === label,
      );
    const firstRunSpan = checkpoint('start')?.parentSpanContext?.spanId; // the first attempt's run span
    const firstActionSpan = checkpoint('before charge')?.parentSpanContext?.spanId;
    expect(firstRunSpan).toMatch(/^[0-9a-f]{16}$/);
    expect(firstActionSpan).toMatch(/^[0-9a-f]{16}$/);
    const run = spans.find((s) => s.name === 'agentstate.durable_run') as (typeof spans)[number];
    expect(run.attributes).toMatchObject({ 'agentstate.run.resumed': true, 'agentstate.run.status': 'done' });
    expect(run.links.map((l) => [l.context.spanId, l.attributes?.['agentstate.link']])).toEqual([
      [firstRunSpan, 'resumes'],
    ]);
    const action = spans.find(
      (s) => s.name === 'agentstate.action charge' && s.spanContext().traceId === run.spanContext().traceId,
    ) as (typeof spans)[number];
    expect(action.attributes).toMatchObject({
      'agentstate.action.recovering': true,
      'agentstate.action.lookup': 'found',
      'agentstate.action.status': 'SUCCESS',
    });
    expect(action.links.map((l) => [l.context.spanId, l.attributes?.['agentstate.link']])).toEqual([
      [firstActionSpan, 'recorded_by'],
    ]);
    expect(charged.size).toBe(1);
    await store.close();
  });
});
