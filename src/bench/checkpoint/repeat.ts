/**
 * Repeats: each system runs several times, interleaved with the others so that a change in the machine's
 * load hits every system alike; each figure reported is the median over the repeats.
 */
import type { OpStats } from './measure.js';
import type { SystemResult } from './run.js';

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

function mergeStats(all: readonly OpStats[]): OpStats {
  const pick = (field: keyof OpStats) => median(all.map((s) => s[field]));
  return {
    count: pick('count'),
    ops_per_s: pick('ops_per_s'),
    p50_ms: pick('p50_ms'),
    p99_ms: pick('p99_ms'),
    mean_ms: pick('mean_ms'),
    max_ms: pick('max_ms'),
    cpu_us_per_op: pick('cpu_us_per_op'),
  };
}

/** The results of one system over its repeats, as one result (the first error, if any repeat failed). */
export function mergeRepeats(results: readonly SystemResult[]): SystemResult {
  const first = results[0];
  if (first === undefined) throw new Error('mergeRepeats: no results');
  const failed = results.find((r) => r.error !== null);
  if (failed !== undefined || results.length === 1) return { ...(failed ?? first), repeats: results.length };
  const ops = results.map((r) => r.ops as NonNullable<SystemResult['ops']>);
  const stored = results.map((r) => r.stored).filter((s) => s !== null);
  const storedMedian = stored[Math.floor(stored.length / 2)];
  return {
    ...first,
    repeats: results.length,
    ops: {
      put: mergeStats(ops.map((o) => o.put)),
      latest: mergeStats(ops.map((o) => o.latest)),
      history: mergeStats(ops.map((o) => o.history)),
    },
    stored: storedMedian ?? null,
  };
}
