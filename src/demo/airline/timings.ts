/**
 * How long the airline took over each booking request, from reading its first byte until its connection
 * was done with it (the answer's last byte handed to the socket, or the caller gone): what a caller waits
 * for beyond the wire, its fsync'd ledger write included. The newest `capacity` are kept (a ring), so a load
 * test can set the airline's share of a slow turn apart from the caller's own (`GET /timings?since=`).
 */

/** One booking request: when it arrived (ms since the epoch) and how long it took (ms). */
export type BookingTiming = readonly [at: number, ms: number];

export const DEFAULT_TIMINGS_CAPACITY = 100_000;

export class BookingTimings {
  private readonly ring: BookingTiming[] = [];
  /** Where the next entry goes once the ring is full (its oldest entry). */
  private next = 0;

  constructor(private readonly capacity = DEFAULT_TIMINGS_CAPACITY) {}

  record(at: number, ms: number): void {
    const entry: BookingTiming = [at, Math.round(ms * 1000) / 1000];
    if (this.ring.length < this.capacity) this.ring.push(entry);
    else this.ring[this.next] = entry;
    this.next = (this.next + 1) % this.capacity;
  }

  /**
   * The requests that arrived at or after `since` (ms since the epoch), by arrival. Requests are recorded
   * when they end, and bookings that arrive together end in any order, so this filters and sorts.
   */
  since(since: number): BookingTiming[] {
    return this.ring.filter(([at]) => at >= since).sort((a, b) => a[0] - b[0]);
  }
}
