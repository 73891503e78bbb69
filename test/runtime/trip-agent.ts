/**
 * An agent written as code on the durable kernel, for tests (and as an agents module for `serve --agents`):
 * it books the route the first input names for the passenger the next turn names, through the demo
 * airline's `airline.book` as a recorded action.
 */
import type { JsonValue } from '../../src/core/json.js';
import type { Agent } from '../../src/runtime/agent.js';

/** Books the route the first input names, for the passenger the second input names. */
export const tripAgent: Agent = {
  name: 'trip_code',
  description: 'Books a flight, in plain code on the durable kernel.',
  taskTypes: [],
  greeting: { en: 'Where to?', zh: '去哪里？' },
  async run(ctx, { tools }) {
    const ask = String(await ctx.waitForInput());
    const route = /from ([A-Z]{3}) to ([A-Z]{3}) on (\d{4}-\d{2}-\d{2})/.exec(ask);
    if (route === null) return 'Say: from XXX to YYY on YYYY-MM-DD.';
    const passenger = String(await ctx.waitForInput({ prompt: 'Who is flying?' }));
    const params = {
      origin: route[1] as string,
      destination: route[2] as string,
      date: route[3] as string,
      cabin_class: 'economy',
      passenger_name: passenger,
    };
    const book = tools.get('airline.book');
    if (book === undefined) throw new Error('no airline.book tool');
    const booking = await ctx.action<JsonValue>('airline.book', params, {
      run: (key, call) =>
        book.execute(params, { idempotencyKey: key, signal: call.signal, attempt: call.attempt }),
      lookup: async (key) => (book.lookup === undefined ? { found: false } : book.lookup(key)),
    });
    const id = (booking as { booking_id?: string }).booking_id;
    return { reply: `Booked ${params.origin} to ${params.destination} for ${passenger}: ${id}.` };
  },
};

export const agents = [tripAgent];
