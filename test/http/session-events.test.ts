import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, sessionCursor } from '../../src/client/index.js';
import type { RunEvent, Session } from '../../src/core/model.js';
import { runIdFor } from '../../src/core/run-id.js';
import type { TurnResponse } from '../../src/server/turn-runner.js';
import type { NewRunEvent, Scope, StateStore } from '../../src/store/types.js';
import { call, startTestServer, type TestServer } from './harness.js';
import { type RuntimeServer, startRuntimeServer } from './runtime-server.js';
import { type SseFrame, sseFrames } from './sse.js';

let served: RuntimeServer;
let server: TestServer;
let store: StateStore;

beforeAll(async () => {
  served = await startRuntimeServer();
  server = served.server;
  store = served.store;
});
afterAll(() => served.close());

const alice = (): Scope => ({ tenant_id: server.tenantA, user_id: server.alice });

async function newSession(): Promise<Session> {
  const made = await call<Session>(server.url, 'POST', '/v1/sessions', {
    token: server.tokens.alice,
    body: { agent: 'flight_booking' },
  });
  expect(made.status).toBe(201);
  return made.body;
}

/** An open session stream, read frame by frame. */
interface Live {
  readonly response: Response;
  /** The next `n` frames; fails after `ms`. */
  take(n: number, ms?: number): Promise<SseFrame[]>;
  close(): void;
}

async function openLive(
  sessionId: string,
  headers: Record<string, string> = {},
  query = '',
  base = server.url,
): Promise<Live> {
  const controller = new AbortController();
  const response = await fetch(`${base}/v1/sessions/${sessionId}/events${query}`, {
    headers: { authorization: `Bearer ${server.tokens.alice}`, accept: 'text/event-stream', ...headers },
    signal: controller.signal,
  });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toContain('text/event-stream');
  const frames = sseFrames(response.body as ReadableStream<Uint8Array>);
  return {
    response,
    async take(n, ms = 10_000) {
      const out: SseFrame[] = [];
      const deadline = Date.now() + ms;
      while (out.length < n) {
        const left = deadline - Date.now();
        const next = await Promise.race([
          frames.next(),
          new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), Math.max(0, left))),
        ]);
        if (next === 'timeout')
          throw new Error(`only ${out.length} of ${n} frames came: ${JSON.stringify(out)}`);
        if (next.done) throw new Error(`the stream ended after ${out.length} of ${n} frames`);
        out.push(next.value);
      }
      return out;
    },
    close: () => controller.abort(),
  };
}

async function append(sessionId: string, runId: string, ...events: NewRunEvent[]): Promise<void> {
  await store.appendRunEvents(alice(), { session_id: sessionId, run_id: runId, events });
}

const started = (runId: string): NewRunEvent => ({ type: 'run.started', data: { run_id: runId } });
const delta = (text: string): NewRunEvent => ({ type: 'message.delta', data: { text } });
const completed: NewRunEvent = { type: 'run.completed', data: { reply: 'done' } };

/** The frame's event, checked to be the frame's type and cursor. */
function eventOf(frame: SseFrame): RunEvent {
  const event = frame.data as RunEvent;
  expect(frame.event).toBe(event.type);
  expect(frame.id).toBe(`${event.run_id}:${event.id}`);
  return event;
}

describe('a session’s live events', () => {
  it('sends a run in flight from its start, then the next run once messages moved the session on', async () => {
    const session = await newSession();
    const first = runIdFor(session.id, 0);
    await append(session.id, first, started(first), delta('Hel'));
    const live = await openLive(session.id);
    try {
      const opening = (await live.take(2)).map(eventOf);
      expect(opening.map((e) => [e.run_id, e.type])).toEqual([
        [first, 'run.started'],
        [first, 'message.delta'],
      ]);
      await append(session.id, first, delta('lo'), completed);
      const ending = (await live.take(2)).map(eventOf);
      expect(ending.map((e) => e.type)).toEqual(['message.delta', 'run.completed']);
      // The run's data is the stored event, its own id included.
      const stored = await store.listRunEvents(alice(), session.id, first);
      expect([...opening, ...ending]).toEqual(stored);

      // The turn committed its messages: the session's next run has another id, and the stream moves to it.
      const [, reply] = await store.appendMessages(alice(), session.id, [
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: 'Hello' },
      ]);
      const second = runIdFor(session.id, reply?.seq ?? 0);
      expect(second).not.toBe(first);
      await append(session.id, second, started(second), completed);
      const next = (await live.take(2)).map(eventOf);
      expect(next.map((e) => [e.run_id, e.type])).toEqual([
        [second, 'run.started'],
        [second, 'run.completed'],
      ]);
    } finally {
      live.close();
    }
  });

  it('resumes after Last-Event-ID or ?after=, each event once and in order', async () => {
    const session = await newSession();
    const first = runIdFor(session.id, 0);
    await append(session.id, first, started(first), delta('a'), delta('b'), completed);
    const [, reply] = await store.appendMessages(alice(), session.id, [
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: 'ab' },
    ]);
    const second = runIdFor(session.id, reply?.seq ?? 0);
    await append(session.id, second, started(second), delta('c'));
    const firstEvents = await store.listRunEvents(alice(), session.id, first);
    const secondEvents = await store.listRunEvents(alice(), session.id, second);

    // Without a cursor: from the session's next run, the second.
    const fresh = await openLive(session.id);
    try {
      expect((await fresh.take(2)).map(eventOf)).toEqual(secondEvents);
    } finally {
      fresh.close();
    }
    // After the first run's second event: the rest of the first run, then the second.
    const cursor = sessionCursor(firstEvents[1] as RunEvent);
    const resumes: { headers: Record<string, string>; query: string }[] = [
      { headers: { 'last-event-id': cursor }, query: '' },
      { headers: {}, query: `?after=${cursor}` },
    ];
    for (const resume of resumes) {
      const live = await openLive(session.id, resume.headers, resume.query);
      try {
        expect((await live.take(4)).map(eventOf)).toEqual([...firstEvents.slice(2), ...secondEvents]);
      } finally {
        live.close();
      }
    }
    // After the first run's final event: straight to the second run, and on as it goes.
    const last = await openLive(session.id, {
      'last-event-id': sessionCursor(firstEvents.at(-1) as RunEvent),
    });
    try {
      expect((await last.take(2)).map(eventOf)).toEqual(secondEvents);
      await append(session.id, second, completed);
      const [end] = (await last.take(1)).map(eventOf);
      expect(end?.type).toBe('run.completed');
      expect(end?.run_id).toBe(second);
    } finally {
      last.close();
    }
  });

  it('follows a failed run into its next attempt, which keeps the run’s id', async () => {
    const session = await newSession();
    const run = runIdFor(session.id, 0);
    const live = await openLive(session.id);
    try {
      await append(session.id, run, started(run), {
        type: 'run.failed',
        data: { error: { code: 'internal', message: 'x' } },
      });
      expect((await live.take(2)).map((f) => eventOf(f).type)).toEqual(['run.started', 'run.failed']);
      await append(session.id, run, { type: 'run.started', data: { resumed: true } }, completed);
      const again = (await live.take(2)).map(eventOf);
      expect(again.map((e) => [e.run_id, e.type])).toEqual([
        [run, 'run.started'],
        [run, 'run.completed'],
      ]);
    } finally {
      live.close();
    }
  });

  it('moves on when the session’s next run changes while the stream waits (messages appended)', async () => {
    const session = await newSession();
    const live = await openLive(session.id);
    try {
      const [message] = await store.appendMessages(alice(), session.id, [{ role: 'user', content: 'note' }]);
      const next = runIdFor(session.id, message?.seq ?? 0);
      await append(session.id, next, started(next));
      const [frame] = (await live.take(1, 8000)).map(eventOf);
      expect(frame?.run_id).toBe(next);
    } finally {
      live.close();
    }
  });

  it('follows real turns sent as plain JSON, in order, each ending with its answer', async () => {
    const session = await newSession();
    const live = await openLive(session.id);
    try {
      const answers: (TurnResponse & { run_id: string })[] = [];
      for (const input of ['Book a flight from Beijing to Shanghai next Wednesday', 'economy']) {
        const turn = await call<TurnResponse & { run_id: string }>(
          server.url,
          'POST',
          `/v1/sessions/${session.id}/turns`,
          {
            token: server.tokens.alice,
            body: { input },
          },
        );
        expect(turn.status).toBe(200);
        answers.push(turn.body);
      }
      const events: RunEvent[] = [];
      while (events.filter((e) => e.type === 'run.completed').length < 2)
        events.push(...(await live.take(1)).map(eventOf));
      const runs = [...new Set(events.map((e) => e.run_id))];
      expect(runs).toEqual(answers.map((a) => a.run_id));
      for (const [i, runId] of runs.entries()) {
        const own = events.filter((e) => e.run_id === runId);
        expect(own).toEqual(await store.listRunEvents(alice(), session.id, runId));
        expect(own.at(-1)?.data).toEqual(answers[i]);
      }
      expect(events.map((e) => e.type)).toContain('task.updated');
    } finally {
      live.close();
    }
  });

  it('agentstate/client followSession yields the same, and resumes after a cursor', async () => {
    const client = createClient({ baseUrl: server.url, token: server.tokens.alice });
    const session = await client.sessions.create({ agent: 'flight_booking' });
    const controller = new AbortController();
    const seen: RunEvent[] = [];
    let opened: () => void = () => undefined;
    const open = new Promise<void>((resolve) => {
      opened = resolve;
    });
    const reading = (async () => {
      const follow = client.followSession(session.id, { signal: controller.signal, onOpen: () => opened() });
      for await (const event of follow) {
        seen.push(event as RunEvent);
        if (event.type === 'run.completed') controller.abort();
      }
    })().catch((e: unknown) => e);
    // The stream is answered (the server follows the session) before the turn starts.
    await open;
    const turn = await client.sessions.turn(session.id, 'Book a flight from Beijing to Shanghai');
    expect(((await reading) as Error).name).toBe('AbortError');
    expect(seen.at(-1)?.data).toEqual(turn);
    const after = sessionCursor(seen[2] as RunEvent);
    const rest: RunEvent[] = [];
    for await (const event of client.followRun(session.id, seen[0]?.run_id as string, {
      after: seen[2]?.id ?? null,
    }))
      rest.push(event as RunEvent);
    expect(rest).toEqual(seen.slice(3));
    const resumed = new AbortController();
    const again: RunEvent[] = [];
    for await (const event of client.followSession(session.id, { after, signal: resumed.signal })) {
      again.push(event as RunEvent);
      if (event.type === 'run.completed') break;
    }
    expect(again).toEqual(seen.slice(3));
  });

  it('is scoped like the session; without the event-stream header or with a bad cursor, a JSON 400', async () => {
    const session = await newSession();
    const path = `/v1/sessions/${session.id}/events`;
    const sse = { accept: 'text/event-stream' };
    expect((await call(server.url, 'GET', path, { token: server.tokens.bob, headers: sse })).status).toBe(
      404,
    );
    expect((await call(server.url, 'GET', path, { token: server.tokens.carol, headers: sse })).status).toBe(
      404,
    );
    const missing = await call(server.url, 'GET', '/v1/sessions/sess_aaaaaaaaaaaaaaaaaaaaaaaaaa/events', {
      token: server.tokens.alice,
      headers: sse,
    });
    expect(missing.status).toBe(404);
    const plain = await call(server.url, 'GET', path, { token: server.tokens.alice });
    expect(plain.status).toBe(400);
    expect(plain.body.error.code).toBe('invalid_request');
    expect(plain.body.error.message).toContain('text/event-stream');
    const bad = await call(server.url, 'GET', `${path}?after=12`, {
      token: server.tokens.alice,
      headers: sse,
    });
    expect(bad.status).toBe(400);
    // The tenant's key reads any session of the tenant.
    const controller = new AbortController();
    const tenant = await fetch(`${server.url}${path}`, {
      headers: { authorization: `Bearer ${server.keyA}`, ...sse },
      signal: controller.signal,
    });
    expect(tenant.status).toBe(200);
    controller.abort();
  });

  it('ends its streams when the server closes', async () => {
    const own = await startTestServer({ store });
    const made = await call<Session>(own.url, 'POST', '/v1/sessions', { token: own.tokens.alice, body: {} });
    expect(made.status).toBe(201);
    const response = await fetch(`${own.url}/v1/sessions/${made.body.id}/events`, {
      headers: { authorization: `Bearer ${own.tokens.alice}`, accept: 'text/event-stream' },
    });
    expect(response.status).toBe(200);
    const ended = response.text();
    const closed = Date.now();
    await own.close();
    expect(await ended).toBe(': following the session\n\n');
    expect(Date.now() - closed).toBeLessThan(5000);
  });
});
