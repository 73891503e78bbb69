/**
 * The sweeper: removes expired sessions and their messages in batches, on an interval, in every server
 * process. Expired sessions are already invisible to every read; sweeping reclaims their storage. Several
 * processes may sweep one store at once: each batch is the adapter's atomic delete, so nothing is deleted twice.
 */
import type { AgentStateMetrics } from '../observability/metrics.js';
import type { StateStore } from '../store/types.js';

export interface SweeperOptions {
  readonly store: StateStore;
  /** Time between sweeps. Default 30 s. */
  readonly intervalMs?: number;
  /** Sessions deleted per store call; small batches keep locks short. Default 500. */
  readonly batchSize?: number;
  /** Upper bound of sessions one sweep deletes before it yields to the next interval. Default 100 000. */
  readonly maxPerSweep?: number;
  readonly metrics?: AgentStateMetrics;
  /** Called when a sweep fails; the sweeper keeps running. */
  readonly onError?: (error: unknown) => void;
}

export interface Sweeper {
  /** Sweeps until nothing expired is left (or maxPerSweep); returns how many sessions were deleted. */
  sweepNow(): Promise<number>;
  /** Stops the interval and waits for a sweep in progress. Safe to call twice. */
  stop(): Promise<void>;
}

export const DEFAULT_SWEEP_INTERVAL_MS = 30_000;
export const DEFAULT_SWEEP_BATCH = 500;

const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

export async function sweepOnce(
  store: StateStore,
  batchSize = DEFAULT_SWEEP_BATCH,
  maxPerSweep = 100_000,
): Promise<number> {
  let total = 0;
  while (total < maxPerSweep) {
    const deleted = await store.sweepExpired(Math.min(batchSize, maxPerSweep - total));
    total += deleted;
    if (deleted < batchSize) break;
    await yieldToEventLoop();
  }
  return total;
}

export function startSweeper(options: SweeperOptions): Sweeper {
  const intervalMs = options.intervalMs ?? DEFAULT_SWEEP_INTERVAL_MS;
  const batchSize = options.batchSize ?? DEFAULT_SWEEP_BATCH;
  const maxPerSweep = options.maxPerSweep ?? 100_000;
  let running: Promise<number> | null = null;
  let stopped = false;

  const sweepNow = (): Promise<number> => {
    if (running !== null) return running;
    running = (async () => {
      try {
        const deleted = await sweepOnce(options.store, batchSize, maxPerSweep);
        options.metrics?.sweeperRuns.inc({ outcome: 'ok' });
        return deleted;
      } catch (error) {
        options.metrics?.sweeperRuns.inc({ outcome: 'error' });
        options.onError?.(error);
        return 0;
      } finally {
        running = null;
      }
    })();
    return running;
  };

  // A random first delay spreads the sweeps of instances started together.
  const schedule = (delay: number): NodeJS.Timeout =>
    setTimeout(() => {
      if (stopped) return;
      void sweepNow().finally(() => {
        if (!stopped) timer = schedule(intervalMs);
      });
    }, delay).unref();
  let timer = schedule(Math.floor(Math.random() * Math.min(intervalMs, 5_000)));

  return {
    sweepNow,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      if (running !== null) await running;
    },
  };
}
