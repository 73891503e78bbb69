/** Timing of single operations and their summary: throughput over wall time, and latency percentiles. */
import { performance } from 'node:perf_hooks';

export interface OpStats {
  readonly count: number;
  /** Operations per second over the wall time of the phase (all workers together). */
  readonly ops_per_s: number;
  readonly p50_ms: number;
  readonly p99_ms: number;
  readonly mean_ms: number;
  readonly max_ms: number;
  /**
   * CPU time of this process (user + system, every thread) per operation, in µs: steadier than ops/s on a
   * shared machine. A server's own CPU (PostgreSQL, Redis) is not in it.
   */
  readonly cpu_us_per_op: number;
}

/** Nearest-rank percentile of sorted samples. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1] as number;
}

function round(value: number, digits: number): number {
  const scale = 10 ** digits;
  return Math.round(value * scale) / scale;
}

export function summarize(samples: readonly number[], wallMs: number, cpuMs = 0): OpStats {
  const sorted = [...samples].sort((a, b) => a - b);
  const total = sorted.reduce((sum, ms) => sum + ms, 0);
  return {
    count: sorted.length,
    ops_per_s: wallMs > 0 ? round((sorted.length * 1000) / wallMs, 1) : 0,
    p50_ms: round(percentile(sorted, 50), 4),
    p99_ms: round(percentile(sorted, 99), 4),
    mean_ms: sorted.length > 0 ? round(total / sorted.length, 4) : 0,
    max_ms: round(sorted.at(-1) ?? 0, 4),
    cpu_us_per_op: sorted.length > 0 ? round((cpuMs * 1000) / sorted.length, 1) : 0,
  };
}

/**
 * Runs `jobs` (each a list of operations done in order) with `concurrency` workers, timing each
 * operation. Returns the per-operation samples, and the wall time and this process's CPU time of the phase.
 */
export async function timePhase(
  jobs: readonly (readonly (() => Promise<void>)[])[],
  concurrency: number,
): Promise<{ samples: number[]; wallMs: number; cpuMs: number }> {
  const samples: number[] = [];
  let next = 0;
  const worker = async () => {
    for (let job = next++; job < jobs.length; job = next++) {
      for (const op of jobs[job] ?? []) {
        const started = performance.now();
        await op();
        samples.push(performance.now() - started);
      }
    }
  };
  const started = performance.now();
  const cpu = process.cpuUsage();
  await Promise.all(Array.from({ length: Math.max(1, concurrency) }, worker));
  const used = process.cpuUsage(cpu);
  return { samples, wallMs: performance.now() - started, cpuMs: (used.user + used.system) / 1000 };
}
