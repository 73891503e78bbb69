import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Message, RunEvent, Session } from '../../src/core/model.js';
import { createRulesModel } from '../../src/models/rules/index.js';
import { createModelRegistry, type Model } from '../../src/models/types.js';
import type { TurnResponse } from '../../src/server/turn-runner.js';
import { call, type TestServer } from './harness.js';
import { type RuntimeServer, startRuntimeServer } from './runtime-server.js';

/** Inputs whose extraction the model holds for a while (1 s): the run stays busy meanwhile. */
const SLOW = /slowly/;
let served: RuntimeServer;
let server: TestServer;
/** Told when the model starts a slow extraction: the run holds the session from then on. */
let slowStarted: () => void = () => undefined;

/** Resolves once the next slow extraction has started. */
function nextSlowStart(): Promise<void> {
  return new Promise((resolve) => {
    slowStarted = resolve;
  });
}

beforeAll(async () => {
  const rules = createRulesModel();
  const slow: Model = {
    ...rules,
    async extract(request) {
      if (SLOW.test(request.input)) {
        slowStarted();
        await new Promise((resolve) => setTimeout(resolve, 1_000));
      }
      return rules.extract(request);
    },
  };
  served = await startRuntimeServer({ models: createModelRegistry([slow]) });
  server = served.server;
});
afterAll(() => served.close());

async function newSession(context: Record<string, unknown> = {}): Promise<Session> {
  const made = await call<Session>(server.url, 'POST', '/v1/sessions', {
    token: server.tokens.alice,
    body: { agent: 'flight_booking', context },
  });
  expect(made.status).toBe(201);
  return made.body;
}

function turn(sessionId: string, body: Record<string, unknown>) {
  return call<TurnResponse & { run_id: string }>(server.url, 'POST', `/v1/sessions/${sessionId}/turns`, {
    token: server.tokens.alice,
    body,
  });
}

/** The first turn, then (once it is under way) the second. */
async function twoAtOnce(sessionId: string, second: Record<string, unknown>) {
  const started = nextSlowStart();
  const first = turn(sessionId, { input: 'Book a flight slowly from Beijing to Shanghai' });
  await started;
  return Promise.all([first, turn(sessionId, second)]);
}

async function userInputs(sessionId: string): Promise<Message[]> {
  const messages = await call<{ items: Message[] }>(server.url, 'GET', `/v1/sessions/${sessionId}/messages`, {
    token: server.tokens.alice,
  });
  return messages.body.items.filter((m) => m.role === 'user');
}

describe('on_busy', () => {
  it('reject (the default): the second input gets 409 and nothing of it is stored', async () => {
    const session = await newSession();
    const [first, second] = await twoAtOnce(session.id, { input: 'economy' });
    expect(first.status).toBe(200);
    expect(second.status).toBe(409);
    expect((await userInputs(session.id)).map((m) => m.content)).toEqual([
      'Book a flight slowly from Beijing to Shanghai',
    ]);
  });

  it('enqueue (per request): the second input runs right after the first, in order', async () => {
    const session = await newSession();
    const [first, second] = await twoAtOnce(session.id, { input: 'economy', on_busy: 'enqueue' });
    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
    expect(second.body.run_id).not.toBe(first.body.run_id);
    expect(second.body.tasks[0]?.slots).toMatchObject({ cabin_class: 'economy' });
    expect((await userInputs(session.id)).map((m) => m.content)).toEqual([
      'Book a flight slowly from Beijing to Shanghai',
      'economy',
    ]);
  });

  it('enqueue (the session’s policy): three inputs from two clients run one after another', async () => {
    const session = await newSession({ on_busy: 'enqueue' });
    const started = nextSlowStart();
    const first = turn(session.id, { input: 'Book a flight slowly from Beijing to Shanghai' });
    await started;
    const second = turn(session.id, { input: 'economy' });
    // The second is queued well before the third comes, and both before the first's second is over.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const third = turn(session.id, { input: 'next Wednesday' });
    const answers = await Promise.all([first, second, third]);
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
    expect((await userInputs(session.id)).map((m) => m.content)).toEqual([
      'Book a flight slowly from Beijing to Shanghai',
      'economy',
      'next Wednesday',
    ]);
  });

  it('interrupt: the busy run is cancelled at its next safe point, then the new input runs', async () => {
    const session = await newSession();
    const [first, second] = await twoAtOnce(session.id, {
      input: 'Book a flight from Shanghai to Beijing',
      on_busy: 'interrupt',
    });
    expect(first.status).toBe(409);
    expect(JSON.stringify(first.body)).toContain('cancelled');
    expect(second.status).toBe(200);
    const inputs = await userInputs(session.id);
    expect(inputs.map((m) => [m.content, m.metadata.cancelled ?? false])).toEqual([
      ['Book a flight slowly from Beijing to Shanghai', true],
      ['Book a flight from Shanghai to Beijing', false],
    ]);
    const cancelledRun = String(inputs[0]?.metadata.run_id);
    const log = await call<{ items: RunEvent[] }>(
      server.url,
      'GET',
      `/v1/sessions/${session.id}/runs/${cancelledRun}/events`,
      { token: server.tokens.alice },
    );
    expect(log.body.items.at(-1)?.type).toBe('run.cancelled');
    expect(second.body.tasks[0]?.slots).toMatchObject({ origin: 'SHA', destination: 'BJS' });
  });

  it('refuses a policy it does not know, by name', async () => {
    const session = await newSession();
    const bad = await turn(session.id, { input: 'hello', on_busy: 'later' });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(bad.body)).toContain('on_busy');
  });
});

describe('POST /v1/sessions/{id}/runs/{run_id}/cancel', () => {
  it('cancels a running run (202; its turn answers 409 and its log ends run.cancelled)', async () => {
    const session = await newSession();
    let runId = '';
    const running = fetch(`${server.url}/v1/sessions/${session.id}/turns`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${server.tokens.alice}`,
        accept: 'text/event-stream',
        'content-type': 'application/json',
      },
      body: JSON.stringify({ input: 'Book a flight slowly from Beijing to Shanghai' }),
    });
    const response = await running;
    const reader = response.body?.getReader();
    const first = new TextDecoder().decode((await reader?.read())?.value);
    runId = /"run_id":"(run_[a-z0-9]+)"/.exec(first)?.[1] ?? '';
    expect(runId).toMatch(/^run_/);
    const path = `/v1/sessions/${session.id}/runs/${runId}/cancel`;
    // Another user of the tenant does not see the session; the owner cancels.
    expect((await call(server.url, 'POST', path, { token: server.tokens.bob })).status).toBe(404);
    const asked = await call(server.url, 'POST', path, { token: server.tokens.alice });
    expect(asked.status).toBe(202);
    expect(asked.body).toEqual({ session_id: session.id, run_id: runId, cancel_requested: true });
    let rest = first;
    for (;;) {
      const chunk = await reader?.read();
      if (chunk === undefined || chunk.done) break;
      rest += new TextDecoder().decode(chunk.value);
    }
    expect(rest).toMatch(/event: run\.cancelled/);
    // Over: a second cancel is refused, an unknown run is not found.
    expect((await call(server.url, 'POST', path, { token: server.tokens.alice })).status).toBe(409);
    const unknown = `/v1/sessions/${session.id}/runs/run_unknown/cancel`;
    expect((await call(server.url, 'POST', unknown, { token: server.tokens.alice })).status).toBe(404);
  });
});
