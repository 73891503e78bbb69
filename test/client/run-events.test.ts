import {
  type AddressInfo,
  connect,
  createServer as createNetServer,
  type Server,
  type Socket,
} from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentStateHttpError, createClient, type RunEvent, sessionCursor } from '../../src/client/index.js';
import type { TestServer } from '../http/harness.js';
import { type RuntimeServer, startRuntimeServer } from '../http/runtime-server.js';

let served: RuntimeServer;
let server: TestServer;

beforeAll(async () => {
  served = await startRuntimeServer();
  server = served.server;
});
afterAll(() => served.close());

interface CuttingProxy {
  readonly url: string;
  /** Bytes sent back on each connection so far, in the order they were opened. */
  readonly sent: number[];
  close(): Promise<void>;
}

/**
 * A TCP proxy to the server that lets the n-th connection carry `limits[n]` bytes back to the client (the
 * answer's head included) and then drops both sides; connections past the list are not cut.
 */
async function cuttingProxy(target: string, limits: readonly number[]): Promise<CuttingProxy> {
  const { port } = new URL(target);
  const sent: number[] = [];
  const sockets = new Set<Socket>();
  const proxy: Server = createNetServer((client) => {
    const index = sent.length;
    sent.push(0);
    const limit = limits[index] ?? Number.POSITIVE_INFINITY;
    const upstream = connect(Number(port), '127.0.0.1');
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => undefined);
    }
    client.pipe(upstream);
    upstream.on('data', (chunk: Buffer) => {
      const room = limit - (sent[index] ?? 0);
      if (chunk.length >= room) {
        client.write(chunk.subarray(0, room));
        sent[index] = limit;
        client.destroy();
        upstream.destroy();
        return;
      }
      sent[index] = (sent[index] ?? 0) + chunk.length;
      client.write(chunk);
    });
    upstream.on('end', () => client.end());
    client.on('close', () => upstream.destroy());
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
    sent,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
    },
  };
}

async function collect(stream: AsyncIterable<RunEvent>): Promise<RunEvent[]> {
  const events: RunEvent[] = [];
  for await (const event of stream) events.push(event);
  return events;
}

async function storedEvents(sessionId: string, runId: string): Promise<RunEvent[]> {
  const response = await fetch(`${server.url}/v1/sessions/${sessionId}/runs/${runId}/events?limit=1000`, {
    headers: { authorization: `Bearer ${server.tokens.alice}` },
  });
  return ((await response.json()) as { items: RunEvent[] }).items;
}

const BOOK = 'Book a flight from Beijing to Shanghai next Wednesday';

describe('agentstate/client event streams', () => {
  it('streamTurn yields the run from run.started to run.completed, the turn’s answer', async () => {
    const client = createClient({ baseUrl: server.url, token: server.tokens.alice });
    const session = await client.sessions.create({ agent: 'flight_booking' });
    const events = await collect(client.streamTurn(session.id, BOOK));
    expect(events[0]?.type).toBe('run.started');
    expect(events.at(-1)?.type).toBe('run.completed');
    const types = events.map((e) => e.type);
    expect(types).toContain('message.delta');
    expect(types).toContain('task.updated');
    const answer = events.at(-1)?.data as { reply: string; tasks: { state: string }[] };
    expect(
      events
        .filter((e) => e.type === 'message.delta')
        .map((e) => e.data.text)
        .join(''),
    ).toBe(answer.reply);
    expect(answer.tasks[0]?.state).toBe('COLLECTING');
    expect(events).toEqual(await storedEvents(session.id, events[0]?.run_id as string));

    // followRun replays the same run, after any event, to its final one.
    const runId = events[0]?.run_id as string;
    expect(await collect(client.followRun(session.id, runId))).toEqual(events);
    expect(await collect(client.followRun(session.id, runId, { after: events[2]?.id ?? null }))).toEqual(
      events.slice(3),
    );
    expect(sessionCursor(events[1] as RunEvent)).toBe(`${runId}:${events[1]?.id}`);
  });

  it('a connection cut mid-stream is resumed: every event exactly once, in order', async () => {
    const direct = createClient({ baseUrl: server.url, token: server.tokens.alice });
    const session = await direct.sessions.create({ agent: 'flight_booking' });
    // The turn's own answer is cut inside its events, and so is the first GET that resumes it.
    const proxy = await cuttingProxy(server.url, [1200, 1700]);
    try {
      const client = createClient({ baseUrl: proxy.url, token: server.tokens.alice });
      let opened = 0;
      const events = await collect(
        client.streamTurn(session.id, BOOK, { reconnectDelayMs: 5, onOpen: () => opened++ }),
      );
      expect(proxy.sent.length).toBeGreaterThanOrEqual(3);
      // Every connection was answered (the cuts come after the head): onOpen was told of each.
      expect(opened).toBe(proxy.sent.length);
      expect(proxy.sent.slice(0, 2)).toEqual([1200, 1700]);
      const runId = events[0]?.run_id as string;
      const stored = await storedEvents(session.id, runId);
      expect(stored.length).toBeGreaterThan(6);
      expect(events).toEqual(stored);
      expect(new Set(events.map((e) => e.id)).size).toBe(events.length);
      expect(events.at(-1)?.type).toBe('run.completed');

      // Following a finished run through cuts at every few hundred bytes still gives each event once.
      const choppy = await cuttingProxy(server.url, [700, 800, 900, 1000, 1100, 1200, 1300]);
      try {
        const viaChoppy = createClient({ baseUrl: choppy.url, token: server.tokens.alice });
        expect(await collect(viaChoppy.followRun(session.id, runId, { reconnectDelayMs: 1 }))).toEqual(
          stored,
        );
        expect(choppy.sent.length).toBeGreaterThan(2);
      } finally {
        await choppy.close();
      }
    } finally {
      await proxy.close();
    }
  });

  it('an error answer throws AgentStateHttpError with the server’s code', async () => {
    const alice = createClient({ baseUrl: server.url, token: server.tokens.alice });
    const bob = createClient({ baseUrl: server.url, token: server.tokens.bob });
    const session = await alice.sessions.create({ agent: 'flight_booking' });
    const missing = await collect(alice.streamTurn('sess_aaaaaaaaaaaaaaaaaaaaaaaaaa', 'hello')).catch(
      (e) => e,
    );
    expect(missing).toBeInstanceOf(AgentStateHttpError);
    expect(missing).toMatchObject({
      code: 'not_found',
      status: 404,
      request: 'POST /v1/sessions/{id}/turns',
    });
    const events = await collect(alice.streamTurn(session.id, BOOK));
    const runId = events[0]?.run_id as string;
    const hidden = await collect(bob.followRun(session.id, runId)).catch((e) => e);
    expect(hidden).toMatchObject({ code: 'not_found', status: 404 });
    const unknown = await collect(alice.followRun(session.id, 'run_abc')).catch((e) => e);
    expect(unknown).toMatchObject({ code: 'not_found', status: 404 });
  });

  it('a stream that keeps breaking before it brings anything fails as network after its retries', async () => {
    const alice = createClient({ baseUrl: server.url, token: server.tokens.alice });
    const session = await alice.sessions.create({ agent: 'flight_booking' });
    const events = await collect(alice.streamTurn(session.id, BOOK));
    const runId = events[0]?.run_id as string;
    // The first connection brings two events' worth; every later one breaks inside the answer's head.
    const proxy = await cuttingProxy(server.url, [1000, ...Array.from({ length: 20 }, () => 20)]);
    try {
      const client = createClient({ baseUrl: proxy.url, token: server.tokens.alice, retries: false });
      const got: RunEvent[] = [];
      const error = await (async () => {
        for await (const event of client.followRun(session.id, runId, { reconnects: 2, reconnectDelayMs: 1 }))
          got.push(event);
      })().catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'network', status: 0 });
      expect(got.length).toBeGreaterThan(0);
      expect(got).toEqual(events.slice(0, got.length));
      // The first connection, then the two reconnections that brought nothing.
      expect(proxy.sent).toHaveLength(3);
    } finally {
      await proxy.close();
    }
  });

  it('leaving the loop early closes the stream; an aborted signal stops it', async () => {
    const client = createClient({ baseUrl: server.url, token: server.tokens.alice });
    const session = await client.sessions.create({ agent: 'flight_booking' });
    const first: RunEvent[] = [];
    for await (const event of client.streamTurn(session.id, BOOK)) {
      first.push(event);
      break;
    }
    expect(first.map((e) => e.type)).toEqual(['run.started']);
    const controller = new AbortController();
    controller.abort();
    const aborted = await collect(
      client.followRun(session.id, first[0]?.run_id as string, {
        signal: controller.signal,
      }),
    ).catch((e: unknown) => e);
    expect((aborted as Error).name).toBe('AbortError');
  });
});
