/** `airline.book`: books a flight through the demo airline, idempotent by the action's key, with lookup. */
import type { JsonValue } from '../../core/json.js';
import type { LookupResult, Tool } from '../../runtime/tool.js';
import type { DemoHooks } from '../deploy/workspace.js';
import { type BookingRequest, BookingRequestSchema } from './booking.js';
import { type AirlineClientOptions, createAirlineClient } from './client.js';

export function createAirlineBookTool(
  options: AirlineClientOptions,
  hooks: DemoHooks = {},
): Tool<BookingRequest> {
  const client = createAirlineClient(options);
  return {
    name: 'airline.book',
    description:
      'Book a flight for one passenger: origin and destination IATA codes, date YYYY-MM-DD, cabin. Answers the booking with its PNR.',
    params: BookingRequestSchema,
    async execute(params, ctx): Promise<JsonValue> {
      hooks.at?.('before_effect', 'airline.book', ctx.idempotencyKey);
      const { booking } = await client.book(ctx.idempotencyKey, params, ctx.signal);
      hooks.at?.('ledger_written', 'airline.book', ctx.idempotencyKey);
      return booking;
    },
    async lookup(idempotencyKey): Promise<LookupResult> {
      try {
        const booking = await client.findByKey(idempotencyKey);
        return booking === null ? { found: false } : { found: true, result: booking };
      } catch (error) {
        return { found: 'ambiguous', reason: error instanceof Error ? error.message : String(error) };
      }
    },
  };
}
