/**
 * `agentstate serve --workers N`: the primary process of a cluster of N servers sharing one port (node:cluster
 * hands each new connection to a worker in turn). The primary runs the store's migrations once before the
 * workers start, runs the demo airline they share (unless AGENTSTATE_AIRLINE_URL names one), gathers their
 * metrics for `GET /metrics`, starts a worker again when one dies, and on SIGTERM or SIGINT stops them all
 * gracefully (each finishes its requests in flight) before it exits. Only worker 0 runs the sweeper.
 */
import cluster, { type Worker } from 'node:cluster';
import { resolve } from 'node:path';
import { startAirlineService } from '../../demo/index.js';
import { serveClusterMetrics } from '../../observability/cluster-metrics.js';
import { openStore } from '../../store/open.js';
import { CliError } from '../context.js';

export const WORKER_INDEX_ENV = 'AGENTSTATE_WORKER_INDEX';
/** Sent by the primary to each worker to stop it gracefully (a signal could be the worker's second). */
export const STOP_MESSAGE = 'agentstate:stop';
export const MAX_WORKERS = 64;

/** Set in a worker once it listens; the primary prints the start banner when every worker has. */
export interface ListeningMessage {
  readonly type: 'agentstate:listening';
  readonly address: string;
  readonly banner: string;
}

function isListening(message: unknown): message is ListeningMessage {
  return (message as ListeningMessage | null)?.type === 'agentstate:listening';
}

export interface PrimaryOptions {
  readonly workers: number;
  readonly storeUrl: string;
  readonly dataDir: string;
}

const START_TIMEOUT_MS = 120_000;
const STOP_TIMEOUT_MS = 40_000;
/** A worker that dies sooner than this after its start is started again after a growing delay. */
const QUICK_EXIT_MS = 10_000;
const MAX_RESTART_DELAY_MS = 30_000;

export async function runClusterPrimary(options: PrimaryOptions): Promise<void> {
  // Migrations once, here, rather than N workers racing to run them.
  const store = await openStore(options.storeUrl);
  await store.close();
  const env: Record<string, string> = {};
  const airline = process.env.AGENTSTATE_AIRLINE_URL
    ? null
    : await startAirlineService({ dataDir: resolve(options.dataDir, 'airline') });
  if (airline !== null) env.AGENTSTATE_AIRLINE_URL = airline.url;

  let stopping = false;
  const indexOf = new Map<Worker, number>();
  const startedAt = new Map<number, number>();
  const quickExits = new Map<number, number>();
  const fork = (index: number): Worker => {
    const worker = cluster.fork({ ...env, [WORKER_INDEX_ENV]: String(index) });
    indexOf.set(worker, index);
    startedAt.set(index, Date.now());
    // A worker whose channel breaks must not crash the primary with an unhandled 'error'.
    worker.on('error', () => undefined);
    return worker;
  };
  /** Starts worker `index` again: at once after a long life, after 1, 2, 4 ... 30 s after quick deaths. */
  const restart = (index: number, how: string): void => {
    const quick = Date.now() - (startedAt.get(index) ?? 0) < QUICK_EXIT_MS;
    const streak = quick ? (quickExits.get(index) ?? 0) + 1 : 0;
    quickExits.set(index, streak);
    const delay = streak === 0 ? 0 : Math.min(MAX_RESTART_DELAY_MS, 1_000 * 2 ** (streak - 1));
    process.stderr.write(
      `agentstate: worker ${index} exited with ${how}; starting it again${delay > 0 ? ` in ${delay / 1000} s` : ''}\n`,
    );
    setTimeout(() => {
      if (!stopping) fork(index);
    }, delay).unref();
  };

  const listening = new Map<number, ListeningMessage>();
  /** Workers that listen, so have their stop handler: the others are stopped with SIGTERM. */
  const serving = new WeakSet<Worker>();
  // A scrape sums the workers that listen: one still starting has counted nothing and cannot answer yet.
  serveClusterMetrics(
    () => [...indexOf.keys()].filter((worker) => serving.has(worker) && !worker.isDead()),
    options.workers,
  );
  const started = new Promise<ListeningMessage>((resolveStarted, rejectStarted) => {
    const timer = setTimeout(
      () => rejectStarted(new CliError(`the workers did not all start within ${START_TIMEOUT_MS / 1000} s`)),
      START_TIMEOUT_MS,
    );
    cluster.on('message', (worker, message: unknown) => {
      if (!isListening(message)) return;
      const index = indexOf.get(worker);
      if (index === undefined) return;
      serving.add(worker);
      listening.set(index, message);
      if (listening.size === options.workers) {
        clearTimeout(timer);
        resolveStarted(message);
      }
    });
    cluster.on('exit', (worker, code, signal) => {
      const index = indexOf.get(worker);
      indexOf.delete(worker);
      if (stopping || index === undefined) return;
      if (listening.size < options.workers) {
        clearTimeout(timer);
        rejectStarted(new CliError(`worker ${index} exited with ${signal ?? code} before it listened`));
        return;
      }
      restart(index, String(signal ?? code));
    });
  });

  let stopped: Promise<void> | null = null;
  const stop = (): Promise<void> => {
    stopped ??= stopAll();
    return stopped;
  };
  const stopAll = async (): Promise<void> => {
    stopping = true;
    const workers = [...indexOf.keys()];
    const gone = workers.map(
      (worker) =>
        new Promise<void>((done) => {
          if (worker.isDead()) done();
          else worker.once('exit', () => done());
        }),
    );
    // Over IPC, not a signal: a worker that got the same signal from the terminal's process group would take
    // a second one as "exit now". One still starting (no stop handler yet) or without a channel gets SIGTERM.
    for (const worker of workers) {
      if (serving.has(worker) && worker.isConnected())
        worker.send({ type: STOP_MESSAGE }, undefined, () => undefined);
      else if (!worker.isDead()) worker.process.kill('SIGTERM');
    }
    const force = setTimeout(() => {
      for (const worker of workers) if (!worker.isDead()) worker.process.kill('SIGKILL');
    }, STOP_TIMEOUT_MS);
    await Promise.all(gone);
    clearTimeout(force);
    await airline?.close();
  };
  let signals = 0;
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.on(signal, () => {
      signals++;
      if (signals === 1) {
        void stop().then(() => process.exit(0));
        return;
      }
      // A second signal means "now", as for a single server: each worker, already stopping, takes this
      // SIGTERM as its own second signal and exits at once.
      process.stderr.write('agentstate: second signal: stopping the workers now\n');
      for (const worker of indexOf.keys()) if (!worker.isDead()) worker.process.kill('SIGTERM');
      process.exit(1);
    });
  }
  process.on('uncaughtException', (error) => {
    process.stderr.write(
      `agentstate: the primary failed: ${error instanceof Error ? error.message : String(error)}\n`,
    );
    void stop().then(() => process.exit(1));
  });

  for (let i = 0; i < options.workers; i++) fork(i);
  try {
    const first = await started;
    process.stderr.write(
      first.banner.replace('\n', `\n  workers: ${options.workers} processes on one port\n`),
    );
  } catch (error) {
    await stop();
    throw error;
  }
}

/** The worker's index when this process is a worker of `serve --workers`, else null. */
export function workerIndex(): number | null {
  if (!cluster.isWorker) return null;
  const index = Number(process.env[WORKER_INDEX_ENV]);
  return Number.isInteger(index) && index >= 0 ? index : null;
}

export function parseWorkers(text: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1 || n > MAX_WORKERS)
    throw new CliError(
      `--workers must be a whole number from 1 to ${MAX_WORKERS}, got ${JSON.stringify(text)}`,
    );
  return n;
}
