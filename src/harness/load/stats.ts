/** Latency percentiles (nearest rank) of a list of durations in milliseconds. */
export interface Latencies {
  readonly count: number;
  readonly p50_ms: number;
  readonly p95_ms: number;
  readonly p99_ms: number;
  readonly max_ms: number;
  readonly mean_ms: number;
}

/** The 1-based rank of the p-th percentile (nearest rank) among `count` sorted samples. */
export function percentileRank(count: number, p: number): number {
  return Math.min(count, Math.max(1, Math.ceil((p / 100) * count)));
}

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[percentileRank(sorted.length, p) - 1] as number;
}

const round = (ms: number) => Math.round(ms * 100) / 100;

export function latencies(values: readonly number[]): Latencies {
  const sorted = [...values].sort((a, b) => a - b);
  const sum = sorted.reduce((total, v) => total + v, 0);
  return {
    count: sorted.length,
    p50_ms: round(percentile(sorted, 50)),
    p95_ms: round(percentile(sorted, 95)),
    p99_ms: round(percentile(sorted, 99)),
    max_ms: round(sorted.at(-1) ?? 0),
    mean_ms: round(sorted.length === 0 ? 0 : sum / sorted.length),
  };
}

/** The middle value (the mean of the two middle ones for an even count); 0 for none. */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const n = sorted.length;
  if (n === 0) return 0;
  const mid = Math.floor(n / 2);
  const value =
    n % 2 === 1 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
  return Math.round(value * 100) / 100;
}
