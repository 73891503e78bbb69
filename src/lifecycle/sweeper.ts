/**
 * The sweeper, on an interval in every server process: removes expired sessions and their messages in
 * batches, then what the retention policy no longer keeps (old tasks, finished actions, checkpoints), then
 * sets the active-sessions gauge from the store's counts. Expired sessions are already invisible to every
 * read; sweeping reclaims their storage (the SQL stores also give the space back at the end of a sweep:
 * docs/lifecycle.md). Several processes may sweep one store at once: each batch is the adapter's atomic
 * delete, so nothing is deleted twice.
 */
import { type Clock, systemClock } from '../core/clock.js';
import type { AgentStateMetrics } from '../observability/metrics.js';
import { inSpan } from '../observability/tracing.js';
import type { RetentionSweep, StateStore } from '../store/types.js';
import { refreshSessionGauge } from './gauge.js';
import { type RetentionPolicy, retentionCutoffs, sweepRetentionOnce } from './retention.js';

export interface SweeperOptions {
  readonly store: StateStore;
  /** Time between sweeps. Default 30 s. */
  readonly intervalMs?: number;
  /**
   * Records deleted per store call. Default 500. The SQL stores split a call into transactions short
   * enough for the database (SQLite: about 1 ms each, with the event loop free between them).
   */
  readonly batchSize?: number;
  /** Upper bound of sessions (and of records of each retained kind) one sweep deletes. Default 100 000. */
  readonly maxPerSweep?: number;
  /** How long tasks, actions and checkpoints are kept (default 30 days each); false: never delete them. */
  readonly retention?: RetentionPolicy | false;
  /** The time retention cutoffs are computed from. Default: the system clock. */
  readonly clock?: Clock;
  /** Gets `agentstate_sessions_active{status}` set after every sweep, and the sweep counters. */
  readonly metrics?: AgentStateMetrics;
  /** Called when a sweep fails; the sweeper keeps running. */
  readonly onError?: (error: unknown) => void;
  /** Called after every sweep with what it deleted. */
  readonly onSweep?: (report: SweepReport) => void;
}

export interface SweepReport {
  /** Expired sessions deleted. */
  readonly sessions: number;
  /** Records deleted by retention (zeros when retention is off or failed). */
  readonly retention: RetentionSweep;
}

export interface Sweeper {
  /** Sweeps until nothing expired is left (or maxPerSweep); returns how many sessions were deleted. */
  sweepNow(): Promise<number>;
  /** Like sweepNow, with what retention deleted too. */
  runNow(): Promise<SweepReport>;
  /** Stops the interval and waits for a sweep in progress. Safe to call twice. */
  stop(): Promise<void>;
}

export const DEFAULT_SWEEP_INTERVAL_MS = 30_000;
export const DEFAULT_SWEEP_BATCH = 500;

const NOTHING: RetentionSweep = { tasks: 0, actions: 0, checkpoints: 0 };
const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

export async function sweepOnce(
  store: StateStore,
  batchSize = DEFAULT_SWEEP_BATCH,
  maxPerSweep = 100_000,
): Promise<number> {
  return inSpan('agentstate.sweep', { 'agentstate.sweep.kind': 'expired' }, async (span) => {
    let total = 0;
    while (total < maxPerSweep) {
      const deleted = await store.sweepExpired(Math.min(batchSize, maxPerSweep - total));
      total += deleted;
      if (deleted < batchSize) break;
      await yieldToEventLoop();
    }
    span.setAttribute('agentstate.sweep.deleted', total);
    return total;
  });
}

export function startSweeper(options: SweeperOptions): Sweeper {
  const intervalMs = options.intervalMs ?? DEFAULT_SWEEP_INTERVAL_MS;
  const batchSize = options.batchSize ?? DEFAULT_SWEEP_BATCH;
  const maxPerSweep = options.maxPerSweep ?? 100_000;
  const clock = options.clock ?? systemClock;
  const policy = options.retention ?? {};
  // Checked now, so a bad policy fails at start rather than at every sweep.
  if (policy !== false) retentionCutoffs(policy, clock.now());
  const { store, metrics } = options;
  let running: Promise<SweepReport> | null = null;
  let stopped = false;

  const runNow = (): Promise<SweepReport> => {
    if (running !== null) return running;
    running = (async () => {
      let failed = false;
      const attempt = async <T>(work: () => Promise<T>, fallback: T): Promise<T> => {
        try {
          return await work();
        } catch (error) {
          failed = true;
          options.onError?.(error);
          return fallback;
        }
      };
      try {
        const sessions = await attempt(() => sweepOnce(store, batchSize, maxPerSweep), 0);
        const retention =
          policy === false
            ? NOTHING
            : await attempt(
                () =>
                  sweepRetentionOnce(store, retentionCutoffs(policy, clock.now()), batchSize, maxPerSweep),
                NOTHING,
              );
        if (metrics !== undefined) await attempt(() => refreshSessionGauge(store, metrics), undefined);
        metrics?.sweeperRuns.inc({ outcome: failed ? 'error' : 'ok' });
        const report = { sessions, retention };
        options.onSweep?.(report);
        return report;
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
      void runNow().finally(() => {
        if (!stopped) timer = schedule(intervalMs);
      });
    }, delay).unref();
  let timer = schedule(Math.floor(Math.random() * Math.min(intervalMs, 5_000)));

  return {
    sweepNow: async () => (await runNow()).sessions,
    runNow,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      if (running !== null) await running;
    },
  };
}
