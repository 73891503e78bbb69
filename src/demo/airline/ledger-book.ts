/**
 * The airline's bookings, kept in its ledger on disk. The ledger line IS the booking: it is fsync'd before
 * the airline answers, and reloaded at start, so a restarted airline remembers every key it has seen.
 */
import { join } from 'node:path';
import { appendLedger, fingerprintOf, readLedger } from '../ledger.js';
import { type Booking, type BookingRequest, makeBooking, pnrFor } from './booking.js';

export const AIRLINE_TOOL = 'airline.book';

export type BookOutcome =
  | { readonly kind: 'created'; readonly booking: Booking }
  | { readonly kind: 'replayed'; readonly booking: Booking }
  | { readonly kind: 'key_reused'; readonly booking: Booking };

interface Stored {
  readonly fingerprint: string;
  readonly booking: Booking;
}

export class AirlineLedger {
  readonly path: string;
  private readonly byKey = new Map<string, Stored>();
  private readonly byId = new Map<string, Booking>();
  private readonly pnrs = new Set<string>();

  constructor(dataDir: string) {
    this.path = join(dataDir, 'airline-ledger.jsonl');
    for (const entry of readLedger(this.path)) {
      if (entry.tool !== AIRLINE_TOOL || this.byKey.has(entry.key)) continue;
      this.remember(entry.key, entry.fingerprint, entry.result as unknown as Booking);
    }
  }

  private remember(key: string, fingerprint: string, booking: Booking): void {
    this.byKey.set(key, { fingerprint, booking });
    this.byId.set(booking.booking_id, booking);
    this.pnrs.add(booking.pnr);
  }

  get size(): number {
    return this.byKey.size;
  }

  byIdempotencyKey(key: string): Booking | null {
    return this.byKey.get(key)?.booking ?? null;
  }

  byBookingId(id: string): Booking | null {
    return this.byId.get(id) ?? null;
  }

  /** Books once per key. Synchronous from check to fsync, so two requests with one key cannot both book. */
  book(key: string, request: BookingRequest): BookOutcome {
    const fingerprint = fingerprintOf(request);
    const existing = this.byKey.get(key);
    if (existing !== undefined) {
      const kind = existing.fingerprint === fingerprint ? 'replayed' : 'key_reused';
      return { kind, booking: existing.booking };
    }
    let attempt = 0;
    while (this.pnrs.has(pnrFor(key, attempt))) attempt++;
    const booking = makeBooking(key, request, pnrFor(key, attempt));
    appendLedger(this.path, { key, tool: AIRLINE_TOOL, fingerprint, result: booking });
    this.remember(key, fingerprint, booking);
    return { kind: 'created', booking };
  }
}
