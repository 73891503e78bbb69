/**
 * A flight-booking agent written with the OpenAI Agents SDK (`Agent`, `tool`, `run`), made durable by
 * agentstate/openai-agents: its run is a `durableRun` over a SQLite file, its model answers recorded steps,
 * its tool calls actions with idempotency keys. Killed anywhere (even right after the card was charged),
 * `resume` continues it: no answer is asked for twice, no booking made twice, no card charged twice.
 *
 *   node --import tsx examples/openai-agents-durable/main.ts start ./trip.db          # prints the session
 *   node --import tsx examples/openai-agents-durable/main.ts resume ./trip.db SESSION # after a crash
 *
 * Environment: MODEL_BASE_URL (any Chat Completions endpoint), MODEL (default gpt-4.1-mini),
 * OPENAI_API_KEY, AIRLINE_URL (the demo airline: `agentstate airline`), CHARGES_FILE (the card ledger,
 * default charges.jsonl beside the database). Events are printed as JSON lines.
 */
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { Agent, OpenAIProvider, run, setTracingDisabled, tool } from '@openai/agents';
import { z } from 'zod';
import { durableModel, durableTools, idempotencyKeyOf } from '../../src/adapters/openai-agents/index.js';
import { createAirlineClient } from '../../src/demo/index.js';
import { durableRun } from '../../src/durable/index.js';
import { openStore } from '../../src/store/open.js';

setTracingDisabled(true);
const [command, file, given] = process.argv.slice(2);
if ((command !== 'start' && command !== 'resume') || file === undefined) {
  console.error('usage: main.ts start DB | resume DB SESSION');
  process.exit(2);
}
const say = (event: object) => process.stdout.write(`${JSON.stringify(event)}\n`);
const airline = createAirlineClient({ baseUrl: process.env.AIRLINE_URL ?? 'http://127.0.0.1:4100' });
const chargesFile = process.env.CHARGES_FILE ?? join(dirname(resolve(file)), 'charges.jsonl');

/** A card that charges on every call (it does not deduplicate): a line per charge, found by key. */
const charges = () =>
  existsSync(chargesFile)
    ? readFileSync(chargesFile, 'utf8')
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => JSON.parse(line) as { key: string; payment_id: string; amount_eur: number })
    : [];

const search = tool({
  name: 'search_flights',
  description: 'Flights between two airports on a date.',
  parameters: z.object({ origin: z.string(), destination: z.string(), date: z.string() }),
  execute: async (trip) => ({ flights: [{ flight: 'AS101', ...trip, departs: '09:40' }] }),
});
const book = tool({
  name: 'book_flight',
  description: 'Books a seat on a flight for one passenger.',
  parameters: z.object({
    flight: z.string(),
    origin: z.string(),
    destination: z.string(),
    date: z.string(),
    cabin_class: z.enum(['economy', 'business']),
    passenger_name: z.string(),
  }),
  execute: async (p, _run, details) => {
    const { origin, destination, date, cabin_class: cabin, passenger_name: passenger } = p;
    const request = { origin, destination, date, cabin, passenger };
    return (await airline.book(idempotencyKeyOf(details), request)).booking;
  },
});
const pay = tool({
  name: 'pay',
  description: 'Charges a card for a booking.',
  parameters: z.object({ booking_id: z.string(), amount_eur: z.number(), card: z.string() }),
  execute: async (charge, _run, details) => {
    const key = idempotencyKeyOf(details);
    const paid = { ...charge, payment_id: `pay_${charges().length + 1}`, status: 'CAPTURED' };
    appendFileSync(chargesFile, `${JSON.stringify({ key, ...paid })}\n`);
    if (process.env.CRASH_AFTER_CHARGE === '1') process.kill(process.pid, 'SIGKILL');
    return paid;
  },
});

const store = await openStore(`sqlite:${file}`);
const scope = { tenant_id: 'demo', user_id: 'traveller' };
const sessionId = given ?? (await store.createSession(scope, { agent: null })).id;
say({ event: 'session', id: sessionId });
const provider = new OpenAIProvider({
  baseURL: process.env.MODEL_BASE_URL,
  apiKey: process.env.OPENAI_API_KEY ?? 'none',
  useResponses: false,
});
// The lease owner names this program: a restarted process takes its own killed run's lease at once.
const lease = { owner: 'openai-agents-example' };
const result = await durableRun(store, { scope, sessionId, key: 'trip', lease }, async (ctx) => {
  const agent = new Agent({
    name: 'booker',
    instructions: 'You book flights and pay for them with the tools you have.',
    model: durableModel(ctx, await provider.getModel(process.env.MODEL ?? 'gpt-4.1-mini')),
    tools: durableTools(ctx, [search, book, pay], {
      search_flights: { readOnly: true },
      book_flight: {
        lookup: async (key) => {
          const booking = await airline.findByKey(key);
          return booking === null ? { found: false } : { found: true, result: booking };
        },
      },
      pay: {
        lookup: async (key) => {
          const line = charges().find((c) => c.key === key);
          if (line === undefined) return { found: false };
          const { key: _key, ...paid } = line;
          return { found: true, result: paid };
        },
      },
    }),
  });
  const answer = await run(agent, process.env.TRIP ?? 'Book AS101 from CDG to JFK on 2027-03-14 and pay.');
  return String(answer.finalOutput);
});
say({
  event: result.status,
  resumed: result.resumed,
  ...(result.status === 'done' ? { reply: result.value } : {}),
});
await store.close();
