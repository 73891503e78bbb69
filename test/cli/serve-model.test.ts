/**
 * `agentstate serve --model openai` as a real process, its turns (on a turn thread) answered by a local
 * Chat Completions server: the model's name in the start-up lines, the session, the context and the metrics;
 * a model per session (and the 400 for one not configured) and per agent; a booking whose extraction is the
 * model's and whose action is recorded; a failing and then unreachable model answering 502 and changing
 * nothing, and the next turn working once it is back. The API key is never in any log line or answer.
 */
import type { ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChatCompletionsServer, startChatCompletionsServer } from '../http/chat-completions-server.js';
import { spawnCli, tempDir } from './run.js';

const KEY = 'sk-test-0123456789-never-shown';
const tmp = tempDir();
let model: ChatCompletionsServer;
let child: ChildProcess;
let url = '';
let output = '';
const answers: string[] = [];

// biome-ignore lint/suspicious/noExplicitAny: the answers are read field by field, as JSON
type Json = any;

async function call(method: string, path: string, body?: unknown): Promise<{ status: number; json: Json }> {
  const response = await fetch(`${url}${path}`, {
    method,
    ...(body === undefined
      ? {}
      : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
  });
  const text = await response.text();
  answers.push(text);
  return { status: response.status, json: text.startsWith('{') ? JSON.parse(text) : text };
}

const turn = (id: string, input: string) => call('POST', `/v1/sessions/${id}/turns`, { input });

beforeAll(async () => {
  model = await startChatCompletionsServer();
  const config = join(tmp.dir, 'config.json');
  writeFileSync(
    config,
    JSON.stringify({
      models: {
        available: {
          streamed: {
            kind: 'openai',
            baseURL: model.baseURL,
            model: 'fake-stream',
            apiKeyEnv: 'OPENAI_API_KEY',
            stream: true,
            maxRetries: 0,
          },
        },
        agents: { deploy_pipeline: 'rules' },
      },
    }),
  );
  child = spawnCli(
    ['serve', '--model', 'openai', '--port', '0', '--turn-threads', '1', '--config', config],
    tmp.dir,
    {
      AGENTSTATE_STORE: `sqlite:${tmp.dir}/model.db`,
      OPENAI_BASE_URL: model.baseURL,
      OPENAI_API_KEY: KEY,
      AGENTSTATE_OPENAI_MODEL: 'fake-gpt',
    },
  );
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  url = await new Promise<string>((resolve, reject) => {
    child.stderr?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const match = /agentstate serving (http:\/\/\S+)/.exec(output);
      if (match && output.includes('chat:')) resolve(match[1] as string);
    });
    child.on('exit', (code) => reject(new Error(`serve exited with ${code}: ${output}`)));
  });
}, 120_000);

afterAll(async () => {
  if (child.exitCode === null) {
    child.kill('SIGTERM');
    await new Promise((resolve) => child.on('exit', resolve));
  }
  await model.stop();
  tmp.cleanup();
});

describe('agentstate serve --model openai', { timeout: 120_000 }, () => {
  it('names its models when it starts', () => {
    expect(output).toContain(`model: openai (fake-gpt at ${model.baseURL}), the default`);
    expect(output).toContain(`streamed (fake-stream at ${model.baseURL}, streamed)`);
    expect(output).toContain('by agent: deploy_pipeline: rules');
  });

  it('runs a booking whose extraction and words are the model’s, its action recorded', async () => {
    const made = await call('POST', '/v1/sessions', { agent: 'flight_booking' });
    expect(made.status).toBe(201);
    expect(made.json.model).toBe('openai');
    const id = made.json.id as string;
    const ask = 'Book a flight from Beijing to Shanghai on 2027-01-15, economy, for Ada Lovelace';
    model.extractions.set(ask, {
      intent: 'flight_booking',
      answer: null,
      cancel: false,
      another: false,
      slots: {
        flight_booking: {
          origin: 'BJS',
          destination: 'SHA',
          date: '2027-01-15',
          cabin_class: 'economy',
          passenger_name: 'Ada Lovelace',
        },
      },
    });
    model.extractions.set('yes', {
      ...{ intent: null, cancel: false, another: false, slots: {} },
      answer: 'yes',
    });
    const first = await turn(id, ask);
    expect(first.status).toBe(200);
    expect(first.json.model).toBe('openai');
    expect(first.json.reply).toMatch(
      /^«fake-gpt» Please confirm: .*BJS to SHA on 2027-01-15 for Ada Lovelace/,
    );
    expect(first.json.tasks[0].state).toBe('CONFIRMING');
    const booked = await turn(id, 'yes');
    expect(booked.status).toBe(200);
    expect(booked.json.reply).toMatch(/^«fake-gpt» Booked: BJS to SHA/);
    expect(booked.json.actions).toHaveLength(1);
    expect(booked.json.actions[0]).toMatchObject({ tool: 'airline.book', status: 'SUCCESS' });
    expect(booked.json.actions[0].idempotency_key).toEqual(expect.any(String));
    expect(booked.json.tasks[0].state).toBe('DONE');
    const sent = model.seen.filter((r) => r.model === 'fake-gpt');
    expect(sent.map((r) => r.function)).toContain('extract');
    expect(sent.every((r) => r.auth === `Bearer ${KEY}`)).toBe(true);
    // Extraction and routing answer at once; the reply streams (its text becomes message.delta events).
    expect(sent.every((r) => r.stream === (r.function === null))).toBe(true);

    const session = await call('GET', `/v1/sessions/${id}`);
    expect(session.json.model).toBe('openai');
    const context = await call('GET', `/v1/sessions/${id}/context`);
    expect(context.status).toBe(200);
    expect(context.json.model).toBe('openai');
  });

  it('runs the assistant as a tool-calling agent whose tool calls are recorded actions', async () => {
    for (const [name, passenger] of [
      ['openai', 'Alan Turing'],
      ['streamed', 'Katherine Johnson'],
    ] as const) {
      const made = await call('POST', '/v1/sessions', { agent: 'assistant', model: name });
      expect(made.status).toBe(201);
      const id = made.json.id as string;
      const ask = `Please book BJS to SHA on 2027-02-01, economy, for ${passenger}`;
      const booking = { origin: 'BJS', destination: 'SHA', date: '2027-02-01', cabin_class: 'economy' };
      model.toolPlans.set(ask, [
        { name: 'airline_book', arguments: { ...booking, passenger_name: passenger } },
      ]);
      const before = model.seen.length;
      const booked = await turn(id, ask);
      expect(booked.status).toBe(200);
      expect(booked.json.model).toBe(name);
      const served = name === 'openai' ? 'fake-gpt' : 'fake-stream';
      expect(booked.json.reply).toMatch(new RegExp(`^«${served}» done: \\{"booking_id":"\\S+"`));
      expect(booked.json.actions).toHaveLength(1);
      expect(booked.json.actions[0]).toMatchObject({ tool: 'airline.book', status: 'SUCCESS' });
      expect(booked.json.actions[0].idempotency_key).toEqual(expect.any(String));
      expect(booked.json.tasks[0]).toMatchObject({ type: 'tool_loop', state: 'DONE' });
      // Two answers of the model, the tool call and then the text, both streamed (the text becomes the
      // run's message.delta events), the tool call's arguments put together from its chunks.
      const sent = model.seen.slice(before);
      expect(sent).toHaveLength(2);
      expect(sent.every((r) => r.stream && r.model === served)).toBe(true);
      const stored = await call('GET', `/v1/actions/${booked.json.actions[0].id}`);
      expect(stored.status).toBe(200);
      expect(stored.json).toMatchObject({ tool: 'airline.book', status: 'SUCCESS', session_id: id });
    }
  });

  it('lets a session choose a configured model, streamed, and refuses one that is not', async () => {
    const refused = await call('POST', '/v1/sessions', { agent: 'flight_booking', model: 'gpt-9' });
    expect(refused.status).toBe(400);
    expect(refused.json.error.code).toBe('invalid_request');
    expect(refused.json.error.message).toBe(
      'model: no model named "gpt-9"; choose one of rules, streamed, openai',
    );
    const inContext = await call('POST', '/v1/sessions', {
      agent: 'flight_booking',
      context: { model: 'x' },
    });
    expect(inContext.status).toBe(400);
    expect(inContext.json.error.message).toContain('context.model: no model named "x"');

    const made = await call('POST', '/v1/sessions', { agent: 'flight_booking', model: 'streamed' });
    expect(made.status).toBe(201);
    expect(made.json).toMatchObject({ model: 'streamed', context: { model: 'streamed' } });
    const id = made.json.id as string;
    const before = model.seen.length;
    const answered = await turn(id, 'I want to fly to Shanghai');
    expect(answered.status).toBe(200);
    expect(answered.json.model).toBe('streamed');
    expect(answered.json.reply).toMatch(/^«fake-stream» /);
    const sent = model.seen.slice(before);
    expect(sent.length).toBeGreaterThan(0);
    expect(sent.every((r) => r.model === 'fake-stream' && r.stream)).toBe(true);

    // A new context without a model keeps the session's.
    const patched = await fetch(`${url}/v1/sessions/${id}`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/json', 'if-match': String(answered.json.session.version) },
      body: JSON.stringify({ context: { timezone: 'Asia/Shanghai' } }),
    });
    const patchedText = await patched.text();
    answers.push(patchedText);
    expect(patched.status).toBe(200);
    expect(JSON.parse(patchedText)).toMatchObject({
      model: 'streamed',
      context: { model: 'streamed', timezone: 'Asia/Shanghai' },
    });

    const rules = await call('POST', '/v1/sessions', { agent: 'flight_booking', model: 'rules' });
    const offline = await turn(rules.json.id, 'I want to fly to Shanghai');
    expect(offline.status).toBe(200);
    expect(offline.json.model).toBe('rules');
    expect(offline.json.reply).not.toContain('«');

    const deploy = await call('POST', '/v1/sessions', { agent: 'deploy_pipeline' });
    expect(deploy.json.model).toBe('rules');
  });

  it('answers 502 naming the endpoint while the model fails or is down, changes nothing, then works', async () => {
    const made = await call('POST', '/v1/sessions', { agent: 'flight_booking' });
    const id = made.json.id as string;
    const messagesOf = async () => (await call('GET', `/v1/sessions/${id}/messages`)).json.items.length;

    model.failing = true;
    const failed = await turn(id, 'I want to fly to Shanghai');
    expect(failed.status).toBe(502);
    expect(failed.json.error.code).toBe('upstream_unavailable');
    expect(failed.json.error.message).toContain(`${model.baseURL}/chat/completions answered 500`);
    expect(failed.json.error.message).toContain('[redacted]');
    expect(await messagesOf()).toBe(0);

    model.failing = false;
    await model.stop();
    const down = await turn(id, 'I want to fly to Shanghai');
    expect(down.status).toBe(502);
    expect(down.json.error.code).toBe('upstream_unavailable');
    expect(down.json.error.message).toContain(`${model.baseURL}/chat/completions`);
    expect(await messagesOf()).toBe(0);
    const tasks = await call('GET', `/v1/tasks?session_id=${id}`);
    expect(tasks.json.items).toEqual([]);

    await model.start();
    const back = await turn(id, 'I want to fly to Lisbon');
    expect(back.status).toBe(200);
    expect(back.json.reply).toMatch(/^«fake-gpt» /);
    // The failed attempt was recorded as an interrupted run: the next turn finishes it first, once.
    const messages = (await call('GET', `/v1/sessions/${id}/messages`)).json.items;
    expect(messages.map((m: { role: string; content: string }) => `${m.role}: ${m.content}`)).toEqual([
      'user: I want to fly to Shanghai',
      expect.stringMatching(/^assistant: «fake-gpt» /),
      'user: I want to fly to Lisbon',
      expect.stringMatching(/^assistant: «fake-gpt» /),
    ]);
  });

  it('counts turns and model calls by model in /metrics', async () => {
    const text = (await call('GET', '/metrics')).json as string;
    expect(text).toMatch(
      /^agentstate_turns_total\{agent="flight_booking",model="openai",outcome="ok"\} \d+$/m,
    );
    expect(text).toMatch(
      /^agentstate_turns_total\{agent="flight_booking",model="openai",outcome="upstream_unavailable"\} 2$/m,
    );
    expect(text).toMatch(
      /^agentstate_turns_total\{agent="flight_booking",model="streamed",outcome="ok"\} 1$/m,
    );
    expect(text).toMatch(
      /^agentstate_model_call_duration_seconds_count\{model="openai",call="extract",outcome="ok"\} \d+$/m,
    );
    expect(text).toMatch(
      /^agentstate_model_call_duration_seconds_count\{model="openai",call="extract",outcome="upstream_unavailable"\} 2$/m,
    );
  });

  it('never shows the API key: not in a log line, not in an answer', async () => {
    // The inspector's page and script, too.
    await call('GET', '/');
    child.kill('SIGTERM');
    await new Promise((resolve) => child.on('exit', resolve));
    expect(output.length).toBeGreaterThan(0);
    expect(output).not.toContain(KEY);
    for (const answer of answers) expect(answer).not.toContain(KEY);
    // The key did reach the model's endpoint, as it should.
    expect(model.seen.some((r) => r.auth === `Bearer ${KEY}`)).toBe(true);
  });
});
