/**
 * `airline.book`: books a flight through the demo airline, idempotent by the action's key, with lookup.
 * Its params are the agents' contract (`cabin_class`, `passenger_name`); it sends the airline's own body.
 */
import { AirlineBookParams } from '../../agents/tool-params.js';
import type { JsonValue } from '../../core/json.js';
import type { LookupResult, Tool } from '../../runtime/tool.js';
import type { DemoHooks } from '../deploy/workspace.js';
import type { BookingRequest } from './booking.js';
import { type AirlineClientOptions, createAirlineClient } from './client.js';

export function toBookingRequest(params: AirlineBookParams): BookingRequest {
  return {
    origin: params.origin,
    destination: params.destination,
    date: params.date,
    cabin: params.cabin_class,
    passenger: params.passenger_name,
  };
}

export function createAirlineBookTool(
  options: AirlineClientOptions,
  hooks: DemoHooks = {},
): Tool<AirlineBookParams> {
  const client = createAirlineClient(options);
  return {
    name: 'airline.book',
    description:
      'Book a flight for one passenger: origin and destination IATA codes, date YYYY-MM-DD, cabin class. Answers the booking with its PNR.',
    params: AirlineBookParams,
    async execute(params, ctx): Promise<JsonValue> {
      hooks.at?.('before_effect', 'airline.book', ctx.idempotencyKey);
      const { booking } = await client.book(ctx.idempotencyKey, toBookingRequest(params), ctx.signal);
      hooks.at?.('effect_done', 'airline.book', ctx.idempotencyKey);
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
