/**
 * The airline's bookings, kept in its ledger on disk. The ledger line IS the booking: it is fsync'd before
 * the airline answers, and reloaded at start, so a restarted airline remembers every key it has seen.
 * Bookings that arrive while a write is in progress are written together by the next one (group commit:
 * one write and one fsync for all of them), so many users booking at once do not queue behind one fsync
 * each; no answer is sent before its line is on disk.
 *
 * Beside it, the effect log (effects.ts): a line for every booking request and one for every booking made,
 * whatever the key, with the booking's logical step (who flies where, when, in which cabin). The ledger
 * deduplicates by key; the effect log shows what a caller asked for and what really happened, so a caller
 * that books one trip twice under two keys, or calls again for a booking already made, is counted.
 */
import { join } from 'node:path';
import type { EffectLine } from '../effects.js';
import { fingerprintOf, LedgerAppender, type LedgerEntry, readLedger } from '../ledger.js';
import { type Booking, type BookingRequest, makeBooking, pnrFor } from './booking.js';

export const AIRLINE_TOOL = 'airline.book';

/** The effect log's file name in the airline's data directory. */
export const AIRLINE_EFFECTS_FILE = 'airline-effects.jsonl';

/** The logical step of a booking request: this passenger on this flight in this cabin, whatever the key. */
export function bookingStepOf(request: BookingRequest): string {
  return `book ${request.passenger} ${request.origin}-${request.destination} ${request.date} ${request.cabin}`;
}

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
  private queue: {
    entry: LedgerEntry | null;
    effects: EffectLine[];
    done: (error: unknown) => void;
  }[] = [];
  /** The batches being written, while there are any. */
  private flushing: Promise<void> | null = null;
  private readonly appender: LedgerAppender;
  private readonly effects: LedgerAppender;

  constructor(dataDir: string) {
    this.path = join(dataDir, 'airline-ledger.jsonl');
    this.appender = new LedgerAppender(this.path);
    this.effects = new LedgerAppender(join(dataDir, AIRLINE_EFFECTS_FILE));
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

  get effectsPath(): string {
    return this.effects.path;
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
    const step = bookingStepOf(request);
    const call: EffectLine = { kind: 'call', tool: AIRLINE_TOOL, key, step };
    const existing = this.byKey.get(key) ?? (await this.unwritten.get(key));
    if (existing !== undefined) {
      await this.write(null, [call]);
      const kind = existing.fingerprint === fingerprint ? 'replayed' : 'key_reused';
      return { kind, booking: existing.booking };
    }
    let attempt = 0;
    while (this.pnrs.has(pnrFor(key, attempt))) attempt++;
    const booking = makeBooking(key, request, pnrFor(key, attempt));
    this.pnrs.add(booking.pnr);
    const stored: Stored = { fingerprint, booking };
    const effect: EffectLine = { kind: 'effect', tool: AIRLINE_TOOL, key, step };
    const entry: LedgerEntry = { key, tool: AIRLINE_TOOL, fingerprint, result: booking };
    const written = this.write(entry, [call, effect]).then(
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

  private write(entry: LedgerEntry | null, effects: EffectLine[]): Promise<void> {
    return new Promise((resolve, reject) => {
      this.queue.push({ entry, effects, done: (error) => (error === undefined ? resolve() : reject(error)) });
      this.flushing ??= this.flush().finally(() => {
        this.flushing = null;
      });
    });
  }

  /** Closes the ledger file once the bookings being written are on disk. */
  async close(): Promise<void> {
    await this.flushing;
    await this.appender.close();
    await this.effects.close();
  }

  /** Writes what is queued, one batch after another, until the queue is empty. */
  private async flush(): Promise<void> {
    while (this.queue.length > 0) {
      const batch = this.queue;
      this.queue = [];
      let failure: unknown;
      try {
        // Both files at once (two fsyncs in parallel); no answer goes out before both are on disk.
        await Promise.all([
          this.effects.append(batch.flatMap((item) => item.effects)),
          this.appender.append(batch.flatMap((item) => (item.entry === null ? [] : [item.entry]))),
        ]);
      } catch (error) {
        failure = error ?? new Error('ledger write failed');
      }
      for (const item of batch) item.done(failure);
    }
  }
}
