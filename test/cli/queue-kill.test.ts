/**
 * Queued input survives the crash of the server that took it, with real processes: two `agentstate serve`
 * instances on one SQLite file, a session whose policy is `enqueue`, and the demo airline answering each
 * booking 2.5 s after it is on disk (so a confirmed booking keeps the session busy). Instance A runs the
 * booking; meanwhile instance B takes the session's next input, queues it in the store, and is killed
 * (SIGKILL) while it waits for the session. A runs the queued input once its own turn is over: the
 * session holds it once, after the booking, answered.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AirlineService, startAirlineService } from '../../src/demo/index.js';
import { QUEUE_NAMESPACE } from '../../src/server/turn-queue.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { type ServeChild, startServe } from '../http/serve-child.js';
import { tempDir } from './run.js';

const tmp = tempDir();
const DB = join(tmp.dir, 'queue.db');
let airline: AirlineService;
const servers: ServeChild[] = [];

/** A server on the shared SQLite file, in a folder of its own. */
function serve(name: string): Promise<ServeChild> {
  const cwd = join(tmp.dir, name);
  mkdirSync(cwd, { recursive: true });
  return startServe({ store: `sqlite:${DB}`, cwd, env: { AGENTSTATE_AIRLINE_URL: airline.url } });
}

// biome-ignore lint/suspicious/noExplicitAny: answers are read field by field, as JSON
async function post(url: string, path: string, body: unknown): Promise<{ status: number; json: any }> {
  const response = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, json: await response.json() };
}

/** The bookings the demo airline holds. */
async function airlineBookings(): Promise<number> {
  const health = (await (await fetch(`${airline.url}/health`)).json()) as { bookings: number };
  return health.bookings;
}

beforeAll(async () => {
  airline = await startAirlineService({ dataDir: join(tmp.dir, 'airline'), responseDelayMs: 2_500 });
}, 60_000);

afterAll(async () => {
  for (const server of servers) await server.stop();
  await airline.close();
  tmp.cleanup();
});

describe('a queued input whose server is killed', { timeout: 120_000 }, () => {
  it('still runs, once and in order, on the instance that held the session', async () => {
    const [a, b] = await Promise.all([serve('a'), serve('b')]);
    servers.push(a, b);
    const made = await post(a.url, '/v1/sessions', {
      agent: 'flight_booking',
      context: { on_busy: 'enqueue' },
    });
    expect(made.status).toBe(201);
    const id = made.json.id as string;
    let reply = '';
    for (const input of ['Book a flight from Beijing to Shanghai on 2027-03-03', 'economy', 'Ada Lovelace']) {
      const answered = await post(a.url, `/v1/sessions/${id}/turns`, { input });
      expect(answered.status).toBe(200);
      reply = answered.json.reply;
    }
    expect(reply).toMatch(/^Please confirm/);

    // A books (2.5 s at the airline, under the tool's 5 s timeout); B takes the next input meanwhile and
    // queues it. The airline counts the booking when the request arrives, before its wait: from then on A
    // is inside its turn.
    const bookingsBefore = await airlineBookings();
    const booking = post(a.url, `/v1/sessions/${id}/turns`, { input: 'yes' });
    for (let tries = 0; (await airlineBookings()) === bookingsBefore; tries++) {
      expect(tries).toBeLessThan(500);
      await sleep(20);
    }
    const queued = fetch(`${b.url}/v1/sessions/${id}/turns`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ input: 'I need a flight to Shenzhen' }),
    }).catch((error: unknown) => error);
    const store = await openSqliteStore(DB);
    try {
      const owner = { tenant_id: made.json.tenant_id as string, user_id: made.json.user_id as string };
      for (let tries = 0; ; tries++) {
        const items = await store.listMemory(owner, QUEUE_NAMESPACE, { prefix: `${id}:` });
        if (items.items.length > 0) break;
        expect(tries).toBeLessThan(100);
        await sleep(20);
      }
      b.child.kill('SIGKILL');
      expect(await queued).toBeInstanceOf(Error);

      const booked = await booking;
      expect(booked.status).toBe(200);
      expect(booked.json.reply).toMatch(/^Booked: BJS to SHA/);

      // A runs the queue after its turn: the input B took is answered, once, after the booking.
      let contents: string[] = [];
      for (let tries = 0; tries < 100 && contents.length < 10; tries++) {
        await sleep(100);
        const messages = await store.listMessages(owner, id);
        contents = messages.map((message) => `${message.role}: ${message.content}`);
      }
      expect(contents.slice(6)).toEqual([
        'user: yes',
        expect.stringMatching(/^assistant: Booked: BJS to SHA/),
        'user: I need a flight to Shenzhen',
        'assistant: Where are you flying from?',
      ]);
      const items = await store.listMemory(owner, QUEUE_NAMESPACE, { prefix: `${id}:` });
      expect(items.items.map((item) => (item.value as { state: string }).state)).toEqual(['done']);
      await sleep(500);
      expect(await store.listMessages(owner, id)).toHaveLength(10);
    } finally {
      await store.close();
    }
  });
});
