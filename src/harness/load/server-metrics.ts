/**
 * Server-side turn timing from the server's own Prometheus histogram of request handling time
 * (`agentstate_http_request_duration_seconds` of the turns route: Fastify's elapsed time from the request
 * being read to the answer sent), read before and after a phase. Set against the client's latency, it splits the time of a turn into work
 * inside the runtime and everything else (queueing in the event loop, HTTP, JSON, the network).
 */
export interface Histogram {
  /** Upper bound in seconds -> cumulative count, summed over all label sets. */
  readonly buckets: Map<number, number>;
  readonly count: number;
  readonly sum: number;
}

export interface ServerTiming {
  readonly turns: number;
  readonly mean_ms: number;
  /** Upper bound of the histogram bucket holding the median / the 99th percentile: "at most this". */
  readonly p50_le_ms: number;
  readonly p99_le_ms: number;
}

const METRIC = 'agentstate_http_request_duration_seconds';
const TURNS_ROUTE = 'route="/v1/sessions/:id/turns"';

export function parseHistogram(text: string, metric = METRIC, labels = TURNS_ROUTE): Histogram {
  const buckets = new Map<number, number>();
  let count = 0;
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(metric) || !line.includes(labels)) continue;
    const value = Number(line.slice(line.lastIndexOf(' ') + 1));
    if (line.startsWith(`${metric}_bucket`)) {
      const le = /le="([^"]+)"/.exec(line)?.[1];
      const bound = le === '+Inf' ? Number.POSITIVE_INFINITY : Number(le);
      buckets.set(bound, (buckets.get(bound) ?? 0) + value);
    } else if (line.startsWith(`${metric}_count`)) count += value;
    else if (line.startsWith(`${metric}_sum`)) sum += value;
  }
  return { buckets, count, sum };
}

export async function readHistogram(url: string): Promise<Histogram | null> {
  try {
    const response = await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(10_000) });
    if (!response.ok) return null;
    return parseHistogram(await response.text());
  } catch {
    return null;
  }
}

/** The upper bound (ms) of the bucket holding rank q; Infinity past the last finite bucket. */
function bucketBound(bounds: [number, number][], total: number, q: number): number {
  const rank = q * total;
  for (const [bound, cumulative] of bounds) if (cumulative >= rank) return bound * 1000;
  return Number.POSITIVE_INFINITY;
}

/** The turns between two readings of the histogram. */
export function timingBetween(before: Histogram | null, after: Histogram | null): ServerTiming | null {
  if (before === null || after === null) return null;
  const turns = after.count - before.count;
  if (turns <= 0) return null;
  const bounds = [...after.buckets.entries()]
    .map(([bound, n]): [number, number] => [bound, n - (before.buckets.get(bound) ?? 0)])
    .sort((a, b) => a[0] - b[0]);
  const round = (ms: number) => Math.round(ms * 100) / 100;
  return {
    turns,
    mean_ms: round(((after.sum - before.sum) / turns) * 1000),
    p50_le_ms: round(bucketBound(bounds, turns, 0.5)),
    p99_le_ms: round(bucketBound(bounds, turns, 0.99)),
  };
}
