/**
 * A flight-booking agent written with LangGraph.js (a `StateGraph` over `MessagesAnnotation`: an agent
 * node, a `ToolNode`, `toolsCondition`), made durable by agentstate/langgraph: the graph is invoked inside a
 * `durableRun` over a SQLite file, its model answers recorded steps, its tool calls actions with idempotency
 * keys. Killed anywhere (even right after the card was charged), `resume` continues it: no answer is asked
 * for twice, no booking made twice, no card charged twice.
 *
 *   node --import tsx examples/langgraph-durable/main.ts start ./trip.db          # prints the session
 *   node --import tsx examples/langgraph-durable/main.ts resume ./trip.db SESSION # after a crash
 *
 * Environment: MODEL_BASE_URL (any Chat Completions endpoint), MODEL, OPENAI_API_KEY, AIRLINE_URL (the demo
 * airline: `agentstate airline`), CHARGES_FILE (the card ledger, default charges.jsonl beside the database).
 * The model is a small Chat Completions client; with @langchain/openai it would be
 * `new ChatOpenAI({ model }).bindTools(tools)`, wrapped the same way.
 */
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { HumanMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { END, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';
import { ToolNode, toolsCondition } from '@langchain/langgraph/prebuilt';
import { z } from 'zod';
import { durableModel, durableTools, idempotencyKeyOf } from '../../src/adapters/langgraph/index.js';
import type { JsonObject } from '../../src/core/json.js';
import { createAirlineClient } from '../../src/demo/index.js';
import { durableRun } from '../../src/durable/index.js';
import { chatModel } from '../../src/harness/crash/tool-loop/langgraph-loop.js';
import { openStore } from '../../src/store/open.js';

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
        .map((line) => JSON.parse(line) as { key: string; payment_id: string })
    : [];

const Trip = z.object({ origin: z.string(), destination: z.string(), date: z.string() });
const Booking = Trip.extend({
  flight: z.string(),
  cabin_class: z.enum(['economy', 'business']),
  passenger_name: z.string(),
});
const Charge = z.object({ booking_id: z.string(), amount_eur: z.number(), card: z.string() });

const search = tool(async (trip) => ({ flights: [{ flight: 'AS101', ...trip, departs: '09:40' }] }), {
  name: 'search_flights',
  description: 'Flights between two airports on a date.',
  schema: Trip,
});
const book = tool(
  async (p, config) => {
    const { origin, destination, date, cabin_class: cabin, passenger_name: passenger } = p;
    const request = { origin, destination, date, cabin, passenger };
    return (await airline.book(idempotencyKeyOf(config), request)).booking;
  },
  { name: 'book_flight', description: 'Books a seat on a flight for one passenger.', schema: Booking },
);
const pay = tool(
  async (charge, config) => {
    const key = idempotencyKeyOf(config);
    const paid = { ...charge, payment_id: `pay_${charges().length + 1}`, status: 'CAPTURED' };
    appendFileSync(chargesFile, `${JSON.stringify({ key, ...paid })}\n`);
    if (process.env.CRASH_AFTER_CHARGE === '1') process.kill(process.pid, 'SIGKILL');
    return paid;
  },
  { name: 'pay', description: 'Charges a card for a booking.', schema: Charge },
);

const store = await openStore(`sqlite:${file}`);
const scope = { tenant_id: 'demo', user_id: 'traveller' };
const sessionId = given ?? (await store.createSession(scope, { agent: null })).id;
say({ event: 'session', id: sessionId });
// The lease owner names this program: a restarted process takes its own killed run's lease at once.
const lease = { owner: 'langgraph-example' };
const result = await durableRun(store, { scope, sessionId, key: 'trip', lease }, async (ctx) => {
  const tools = durableTools(ctx, [search, book, pay], {
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
  });
  const specs = tools.map((t) => ({
    name: t.name,
    description: t.description,
    parameters: z.toJSONSchema(t.schema as z.ZodType) as JsonObject,
  }));
  const model = durableModel(
    ctx,
    chatModel(process.env.MODEL_BASE_URL ?? '', specs, {
      model: process.env.MODEL ?? 'gpt-4.1-mini',
      ...(process.env.OPENAI_API_KEY === undefined ? {} : { apiKey: process.env.OPENAI_API_KEY }),
    }),
  );
  const graph = new StateGraph(MessagesAnnotation)
    .addNode('agent', async (state) => ({ messages: [await model.invoke(state.messages)] }))
    .addNode('tools', new ToolNode(tools))
    .addEdge(START, 'agent')
    .addConditionalEdges('agent', toolsCondition, ['tools', END])
    .addEdge('tools', 'agent')
    .compile();
  // A resumed run invokes the graph again from the same input: the journal gives back what was done.
  const trip = process.env.TRIP ?? 'Book AS101 from CDG to JFK on 2027-03-14 and pay.';
  const { messages } = await graph.invoke({ messages: [new HumanMessage(trip)] });
  return String(messages.at(-1)?.content);
});
say({
  event: result.status,
  resumed: result.resumed,
  ...(result.status === 'done' ? { reply: result.value } : {}),
});
await store.close();
