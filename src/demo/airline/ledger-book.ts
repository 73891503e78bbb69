/**
 * The airline's bookings, kept in its ledger on disk. The ledger line IS the booking: it is fsync'd before
 * the airline answers, and reloaded at start, so a restarted airline remembers every key it has seen.
 * Bookings that arrive while a write is in progress are written together by the next one (group commit:
 * one write and one fsync for all of them), so many users booking at once do not queue behind one fsync
 * each; no answer is sent before its line is on disk.
 */
import { join } from 'node:path';
import { fingerprintOf, LedgerAppender, type LedgerEntry, readLedger } from '../ledger.js';
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
  /** Bookings accepted but not yet on disk, by key: a second request with the key waits for the first. */
  private readonly unwritten = new Map<string, Promise<Stored>>();
  private queue: { entry: LedgerEntry; done: (error: unknown) => void }[] = [];
  /** The batches being written, while there are any. */
  private flushing: Promise<void> | null = null;
  private readonly appender: LedgerAppender;

  constructor(dataDir: string) {
    this.path = join(dataDir, 'airline-ledger.jsonl');
    this.appender = new LedgerAppender(this.path);
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

  /**
   * Books once per key: the check and the reservation of the key are synchronous, so two requests with one
   * key cannot both book; the answer waits until the booking's line is fsync'd.
   */
  async book(key: string, request: BookingRequest): Promise<BookOutcome> {
    const fingerprint = fingerprintOf(request);
    const existing = this.byKey.get(key) ?? (await this.unwritten.get(key));
    if (existing !== undefined) {
      const kind = existing.fingerprint === fingerprint ? 'replayed' : 'key_reused';
      return { kind, booking: existing.booking };
    }
    let attempt = 0;
    while (this.pnrs.has(pnrFor(key, attempt))) attempt++;
    const booking = makeBooking(key, request, pnrFor(key, attempt));
    this.pnrs.add(booking.pnr);
    const stored: Stored = { fingerprint, booking };
    const written = this.write({ key, tool: AIRLINE_TOOL, fingerprint, result: booking }).then(
      () => {
        this.remember(key, fingerprint, booking);
        return stored;
      },
      (error: unknown) => {
        this.pnrs.delete(booking.pnr);
        throw error;
      },
    );
    this.unwritten.set(key, written);
    try {
      await written;
    } finally {
      this.unwritten.delete(key);
    }
    return { kind: 'created', booking };
  }

  private write(entry: LedgerEntry): Promise<void> {
    return new Promise((resolve, reject) => {
      this.queue.push({ entry, done: (error) => (error === undefined ? resolve() : reject(error)) });
      this.flushing ??= this.flush().finally(() => {
        this.flushing = null;
      });
    });
  }

  /** Closes the ledger file once the bookings being written are on disk. */
  async close(): Promise<void> {
    await this.flushing;
    await this.appender.close();
  }

  /** Writes what is queued, one batch after another, until the queue is empty. */
  private async flush(): Promise<void> {
    while (this.queue.length > 0) {
      const batch = this.queue;
      this.queue = [];
      let failure: unknown;
      try {
        await this.appender.append(batch.map((item) => item.entry));
      } catch (error) {
        failure = error ?? new Error('ledger write failed');
      }
      for (const item of batch) item.done(failure);
    }
  }
}
