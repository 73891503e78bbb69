/**
 * The demo airline's own time per booking during a phase (its `GET /timings`, see
 * src/demo/airline/timings.ts). Set against the turns' latency, it tells the airline's share of a slow
 * booking turn (its fsync'd ledger; bookings that arrive together wait for one another's write) from the
 * server's.
 */
export async function readAirlineTimings(
  url: string,
  since: number,
  until: number,
): Promise<number[] | null> {
  try {
    const response = await fetch(`${url}/timings?since=${since}`, { signal: AbortSignal.timeout(10_000) });
    if (!response.ok) return null;
    const { bookings } = (await response.json()) as { bookings?: unknown };
    if (!Array.isArray(bookings)) return null;
    const taken: number[] = [];
    for (const entry of bookings) {
      if (!Array.isArray(entry)) return null;
      const [at, ms] = entry as unknown[];
      if (typeof at !== 'number' || typeof ms !== 'number') return null;
      if (at <= until) taken.push(ms);
    }
    return taken;
  } catch {
    return null;
  }
}
