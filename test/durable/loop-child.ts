/**
 * A child process for the tool-loop kill tests: runs (or continues) the plain-code tool-loop agent as a
 * durable run, against a Chat Completions server, and prints JSON lines: `point` at each kill point it
 * passes and `result` or `error` at the end. At the point named in DURABLE_KILL_AT it SIGKILLs itself.
 *
 * Kill points: `book_flight:before_effect`, `book_flight:after_effect` (inside the booking, before or after
 * its effect is appended to the effect log), `write:N` (right after the N-th store write of this process).
 * The booking tool appends one line per booking and never deduplicates by key.
 *
 * argv: storeUrl tenant user sessionId effectLog modelUrl
 */
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { z } from 'zod';
import { defineAgentTool, runToolLoop } from '../../src/agents/tool-loop.js';
import { isAgentStateError } from '../../src/core/errors.js';
import type { JsonValue } from '../../src/core/json.js';
import { durableRun } from '../../src/durable/index.js';
import { openStore } from '../../src/store/open.js';
import type { StateStore } from '../../src/store/types.js';

const [url, tenant, user, sessionId, effectLog, modelUrl] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
  string,
  string,
];
const killAt = process.env.DURABLE_KILL_AT ?? '';

function emit(event: Record<string, JsonValue>): void {
  process.stdout.write(`${JSON.stringify(event)}\n`);
}

function point(name: string): void {
  emit({ event: 'point', point: name });
  if (name === killAt) process.kill(process.pid, 'SIGKILL');
}

const inner = await openStore(url);
let writes = 0;
const store: StateStore = new Proxy(inner, {
  get(target, prop, receiver) {
    const value = Reflect.get(target, prop, receiver);
    if (typeof value !== 'function') return value;
    if (prop === 'commitTurn' || prop === 'putCheckpoint') {
      return async (...args: unknown[]) => {
        const result = await Reflect.apply(value, target, args);
        writes++;
        point(`write:${writes}`);
        return result;
      };
    }
    return value.bind(target);
  },
});

interface Booking {
  readonly key: string;
  readonly booking_id: string;
  readonly flight_id: string;
  readonly passenger: string;
}

function bookings(): Booking[] {
  if (!existsSync(effectLog)) return [];
  return readFileSync(effectLog, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Booking);
}

const searchFlights = defineAgentTool({
  name: 'search_flights',
  description: 'Flights between two airports.',
  readOnly: true,
  parameters: z.object({ from: z.string().length(3), to: z.string().length(3) }),
  run: async ({ from, to }) => ({
    flights: [
      { id: 'MU5101', from, to, price: 1200 },
      { id: 'CA1831', from, to, price: 1350 },
    ],
  }),
});

const bookFlight = defineAgentTool({
  name: 'book_flight',
  description: 'Books a seat on a flight for a passenger.',
  parameters: z.object({ flight_id: z.string(), passenger: z.string().min(1) }),
  run: async ({ flight_id, passenger }, key) => {
    point('book_flight:before_effect');
    const booking: Booking = { key, booking_id: `B-${key.slice(-8)}`, flight_id, passenger };
    appendFileSync(effectLog, `${JSON.stringify(booking)}\n`);
    point('book_flight:after_effect');
    return { booking_id: booking.booking_id, flight_id };
  },
  lookup: async (key) => {
    const found = bookings().find((b) => b.key === key);
    return found === undefined
      ? { found: false }
      : { found: true, result: { booking_id: found.booking_id, flight_id: found.flight_id } };
  },
});

try {
  const result = await durableRun(
    store,
    {
      scope: { tenant_id: tenant, user_id: user },
      sessionId,
      name: 'tool_loop',
      key: 'booking',
      retry: { baseDelayMs: 1, maxDelayMs: 5, timeoutMs: 10_000 },
      lease: { owner: `loop-${sessionId}` },
    },
    async (ctx) => {
      const out = await runToolLoop(ctx, {
        model: { baseURL: modelUrl, model: 'scripted', maxRetries: 0 },
        system: 'You book flights with the tools you have.',
        input: `Book the cheapest flight from PEK to SHA for Alice (${sessionId})`,
        tools: [searchFlights, bookFlight],
      });
      return { reply: out.reply, tool_calls: out.tool_calls.map((c) => ({ ...c })) };
    },
  );
  emit({ event: 'result', result: JSON.parse(JSON.stringify(result)) as JsonValue });
} catch (error) {
  emit({
    event: 'error',
    code: isAgentStateError(error) ? error.code : 'error',
    message: error instanceof Error ? error.message : String(error),
  });
  process.exitCode = 2;
} finally {
  await inner.close();
}
