/** What the demo airline books: the request it accepts and the booking it answers. Shared by server and tool. */
import { createHash } from 'node:crypto';
import { z } from 'zod';

export const CABINS = ['economy', 'premium_economy', 'business', 'first'] as const;

function isCalendarDate(value: string): boolean {
  const [y, m, d] = value.split('-').map(Number) as [number, number, number];
  const date = new Date(Date.UTC(y, m - 1, d));
  return date.getUTCFullYear() === y && date.getUTCMonth() === m - 1 && date.getUTCDate() === d;
}

const airport = z
  .string()
  .regex(/^[A-Z]{3}$/, 'must be a 3-letter IATA airport code in capitals, like "CDG"');

export const BookingRequestSchema = z
  .strictObject({
    origin: airport,
    destination: airport,
    date: z
      .string()
      .regex(/^\d{4}-\d{2}-\d{2}$/, 'must be a date YYYY-MM-DD')
      .refine(isCalendarDate, 'is not a real calendar date'),
    cabin: z.enum(CABINS),
    passenger: z.string().trim().min(1, 'must not be empty').max(100, 'must be at most 100 characters'),
  })
  .refine((r) => r.origin !== r.destination, { message: 'must differ from origin', path: ['destination'] });

export type BookingRequest = z.infer<typeof BookingRequestSchema>;

export interface Booking {
  readonly booking_id: string;
  /** A six-character record locator, like an airline PNR. */
  readonly pnr: string;
  readonly status: 'CONFIRMED';
  readonly origin: string;
  readonly destination: string;
  readonly date: string;
  readonly cabin: (typeof CABINS)[number];
  readonly passenger: string;
  /** Whole euros, derived from the route and cabin (deterministic). */
  readonly fare_eur: number;
  readonly [key: string]: string | number;
}

/** A readable list of what is wrong with a request, naming each field. */
export function describeIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => `${issue.path.length > 0 ? issue.path.join('.') : 'body'}: ${issue.message}`)
    .join('; ');
}

/** PNR letters: no 0/O or 1/I, as airlines avoid them. */
const PNR_ALPHABET = 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789';

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

/** The locator for a key; `attempt` > 0 only when an earlier attempt collided with another key's PNR. */
export function pnrFor(key: string, attempt: number): string {
  const bytes = digest(`pnr:${attempt}:${key}`);
  let out = '';
  for (let i = 0; i < 6; i++) out += PNR_ALPHABET[(bytes[i] ?? 0) % PNR_ALPHABET.length];
  return out;
}

const CABIN_FACTOR: Record<(typeof CABINS)[number], number> = {
  economy: 1,
  premium_economy: 1.6,
  business: 3.2,
  first: 5.5,
};

function fareFor(request: BookingRequest): number {
  const base = 80 + ((digest(`${request.origin}-${request.destination}`)[0] ?? 0) % 200);
  return Math.round(base * CABIN_FACTOR[request.cabin]);
}

/** Builds the booking for a key. Same key and request give the same booking, byte for byte. */
export function makeBooking(key: string, request: BookingRequest, pnr: string): Booking {
  return {
    booking_id: `bk_${digest(`booking:${key}`).toString('hex').slice(0, 24)}`,
    pnr,
    status: 'CONFIRMED',
    origin: request.origin,
    destination: request.destination,
    date: request.date,
    cabin: request.cabin,
    passenger: request.passenger,
    fare_eur: fareFor(request),
  };
}
