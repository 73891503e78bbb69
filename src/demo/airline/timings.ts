/**
 * How long the airline took over each booking request, from reading its first byte to handing the last byte
 * of the answer to the socket (its fsync'd ledger write included): what a caller waits for beyond the wire.
 * The newest `capacity` are kept, in arrival order, so a load test can set the airline's share of a slow turn
 * apart from the caller's own (`GET /timings?since=`).
 */

/** One booking request: when it arrived (ms since the epoch) and how long it took (ms). */
export type BookingTiming = readonly [at: number, ms: number];

export const DEFAULT_TIMINGS_CAPACITY = 100_000;

export class BookingTimings {
  private readonly entries: BookingTiming[] = [];

  constructor(private readonly capacity = DEFAULT_TIMINGS_CAPACITY) {}

  record(at: number, ms: number): void {
    this.entries.push([at, Math.round(ms * 1000) / 1000]);
    if (this.entries.length > this.capacity) this.entries.splice(0, this.entries.length - this.capacity);
  }

  /** The requests that arrived at or after `since` (ms since the epoch), oldest first. */
  since(since: number): BookingTiming[] {
    let low = 0;
    let high = this.entries.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if ((this.entries[mid] as BookingTiming)[0] < since) low = mid + 1;
      else high = mid;
    }
    return this.entries.slice(low);
  }
}
