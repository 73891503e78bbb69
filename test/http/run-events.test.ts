import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunEvent, Session } from '../../src/core/model.js';
import type { TurnResponse } from '../../src/server/turn-runner.js';
import { call, type TestServer } from './harness.js';
import { type RuntimeServer, startRuntimeServer } from './runtime-server.js';
import { allFrames, type SseFrame } from './sse.js';

function eventOf(frame: SseFrame | undefined): RunEvent {
  if (frame === undefined) throw new Error('no frame');
  return frame.data as RunEvent;
}

let served: RuntimeServer;
let server: TestServer;

beforeAll(async () => {
  served = await startRuntimeServer();
  server = served.server;
});
afterAll(() => served.close());

async function newSession(): Promise<Session> {
  const made = await call<Session>(server.url, 'POST', '/v1/sessions', {
    token: server.tokens.alice,
    body: { agent: 'flight_booking' },
  });
  expect(made.status).toBe(201);
  return made.body;
}

function streamTurn(sessionId: string, input: string, token = server.tokens.alice): Promise<Response> {
  return fetch(`${server.url}/v1/sessions/${sessionId}/turns`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      accept: 'text/event-stream',
      'content-type': 'application/json',
    },
    body: JSON.stringify({ input }),
  });
}

function events(sessionId: string, runId: string, headers: Record<string, string> = {}, query = '') {
  return fetch(`${server.url}/v1/sessions/${sessionId}/runs/${runId}/events${query}`, {
    headers: { authorization: `Bearer ${server.tokens.alice}`, ...headers },
  });
}

describe('run events over HTTP', () => {
  it('streams a turn from run.started to run.completed, whose data is the turn’s answer', async () => {
    const session = await newSession();
    const response = await streamTurn(session.id, 'Book a flight from Beijing to Shanghai next Wednesday');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('text/event-stream');
    const frames = await allFrames(response);
    const types = frames.map((f) => f.event);
    expect(types[0]).toBe('run.started');
    expect(types.at(-1)).toBe('run.completed');
    expect(types).toContain('message.delta');
    expect(types).toContain('task.updated');
    expect(types.filter((t) => t === 'message.created')).toHaveLength(2);
    expect(types).toContain('checkpoint.created');
    expect(types).toContain('run.waiting');
    // Ids order the events; each frame's data is the event, its type the frame's.
    const ids = frames.map((f) => Number(f.id));
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(new Set(ids).size).toBe(ids.length);
    for (const frame of frames) expect((frame.data as RunEvent).type).toBe(frame.event);
    const final = eventOf(frames.at(-1)).data as unknown as TurnResponse;
    expect(final.reply).toMatch(/cabin class/i);
    expect(final.session?.id).toBe(session.id);
    expect(final.tasks[0]?.type).toBe('flight_booking');
    const delta = frames.filter((f) => f.event === 'message.delta');
    expect(delta.map((f) => (f.data as RunEvent).data.text).join('')).toBe(final.reply);

    // The next turn answered without the stream is its run's final event, byte for byte.
    const plain = await call<TurnResponse & { run_id: string }>(
      server.url,
      'POST',
      `/v1/sessions/${session.id}/turns`,
      { token: server.tokens.alice, body: { input: 'economy' } },
    );
    expect(plain.status).toBe(200);
    const stored = await events(session.id, plain.body.run_id);
    const { items } = (await stored.json()) as { items: RunEvent[] };
    expect(items.at(-1)?.type).toBe('run.completed');
    expect(items.at(-1)?.data).toEqual(plain.body);
  });

  it('replays after Last-Event-ID, each event once and in order, then ends at the final event', async () => {
    const session = await newSession();
    const frames = await allFrames(await streamTurn(session.id, 'Book a flight from Beijing to Shanghai'));
    const runId = eventOf(frames[0]).run_id;
    for (const cut of [0, 1, 3, frames.length - 2]) {
      const lastId = frames[cut]?.id ?? '';
      const again = await allFrames(
        await events(session.id, runId, { accept: 'text/event-stream', 'last-event-id': lastId }),
      );
      expect(again).toEqual(frames.slice(cut + 1));
    }
    // `?after=` does the same; the whole log from the start without either.
    const after = await allFrames(
      await events(session.id, runId, { accept: 'text/event-stream' }, `?after=${frames[2]?.id}`),
    );
    expect(after).toEqual(frames.slice(3));
    expect(await allFrames(await events(session.id, runId, { accept: 'text/event-stream' }))).toEqual(frames);
  });

  it('keeps a streamed turn’s answer for its Idempotency-Key: a retry gets the run’s final answer', async () => {
    const session = await newSession();
    const key = `stream-${session.id}`;
    const body = JSON.stringify({ input: 'Book a flight from Beijing to Shanghai' });
    const streamed = await fetch(`${server.url}/v1/sessions/${session.id}/turns`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${server.tokens.alice}`,
        accept: 'text/event-stream',
        'content-type': 'application/json',
        'idempotency-key': key,
      },
      body,
    });
    const frames = await allFrames(streamed);
    const final = eventOf(frames.at(-1));
    expect(final.type).toBe('run.completed');
    // The answer is recorded once the run is over, which may come a moment after the stream ends.
    let retry: Response | null = null;
    for (let i = 0; i < 50; i++) {
      retry = await fetch(`${server.url}/v1/sessions/${session.id}/turns`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${server.tokens.alice}`,
          'content-type': 'application/json',
          'idempotency-key': key,
        },
        body,
      });
      if (retry.status !== 409) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(retry?.status).toBe(200);
    expect(retry?.headers.get('idempotent-replayed')).toBe('true');
    expect(await retry?.json()).toEqual(final.data);
    // Nothing ran twice.
    const messages = await call<{ items: unknown[] }>(
      server.url,
      'GET',
      `/v1/sessions/${session.id}/messages`,
      {
        token: server.tokens.alice,
      },
    );
    expect(messages.body.items).toHaveLength(2);
  });

  it('is scoped like the session: another user gets 404, the tenant’s key reads it', async () => {
    const session = await newSession();
    const frames = await allFrames(await streamTurn(session.id, 'Book a flight from Beijing to Shanghai'));
    const runId = eventOf(frames[0]).run_id;
    const path = `/v1/sessions/${session.id}/runs/${runId}/events`;
    expect((await call(server.url, 'GET', path, { token: server.tokens.bob })).status).toBe(404);
    expect((await call(server.url, 'GET', path, { token: server.tokens.carol })).status).toBe(404);
    const tenant = await call<{ items: RunEvent[] }>(server.url, 'GET', path, { token: server.keyA });
    expect(tenant.status).toBe(200);
    expect(tenant.body.items).toHaveLength(frames.length);
  });

  it('answers errors as JSON: an unknown run, a bad id, a turn refused before its run starts', async () => {
    const session = await newSession();
    const unknown = await call(server.url, 'GET', `/v1/sessions/${session.id}/runs/run_abc/events`, {
      token: server.tokens.alice,
    });
    expect(unknown.status).toBe(404);
    const bad = await call(server.url, 'GET', `/v1/sessions/${session.id}/runs/run_abc/events?after=x`, {
      token: server.tokens.alice,
    });
    expect(bad.status).toBe(400);
    const missing = await streamTurn('sess_aaaaaaaaaaaaaaaaaaaaaaaaaa', 'hello');
    expect(missing.status).toBe(404);
    expect(missing.headers.get('content-type')).toContain('application/json');
  });
});
