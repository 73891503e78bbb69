/**
 * Metrics of a server run as several worker processes (`agentstate serve --workers N`). Each worker keeps
 * its own registry; `GET /metrics` on any worker answers the sum over all of them. The worker asks the
 * primary over the cluster's IPC channel; the primary asks every worker that serves for its metrics and
 * merges them with prom-client's AggregatorRegistry.aggregate (counters and histograms add up; the
 * active-sessions gauge is set by one worker only, the one that sweeps).
 *
 * A scrape always gets an answer, and soon: a worker still starting (it has counted nothing yet) is not
 * asked, one that dies meanwhile or does not answer within COLLECT_TIMEOUT_MS is left out, and
 * `agentstate_cluster_workers_reporting` says how many workers the sum covers out of
 * `agentstate_cluster_workers`.
 */
import type { Worker } from 'node:cluster';
import cluster from 'node:cluster';
import { randomUUID } from 'node:crypto';
import { Gauge, Registry } from 'prom-client';
import { type MetricJson, type MetricsFormat, renderSummed } from './exposition.js';

/** Worker → primary: "send me the cluster's metrics". */
const ASK = 'agentstate:metrics';
/** Primary → worker: the answer to ASK. */
const ANSWER = 'agentstate:metrics:answer';
/** Primary → worker: "send me your own metrics". */
const COLLECT = 'agentstate:metrics:collect';
/** Worker → primary: the answer to COLLECT. */
const COLLECTED = 'agentstate:metrics:collected';

/** How long the primary waits for one worker's metrics before it answers without them. */
export const COLLECT_TIMEOUT_MS = 1_500;
/** How long a worker waits for the primary (which itself answers within COLLECT_TIMEOUT_MS). */
const ASK_TIMEOUT_MS = 5_000;

/** One registry's metrics, as `Registry.getMetricsAsJSON` gives them (they cross IPC as plain JSON). */
type MetricsJson = readonly MetricJson[];

interface Ask {
  readonly type: typeof ASK;
  readonly id: string;
  /** The format the scraper asked for (absent: the Prometheus text). */
  readonly format?: MetricsFormat;
}

interface Answer {
  readonly type: typeof ANSWER;
  readonly id: string;
  readonly text?: string;
  readonly error?: string;
}

interface Collect {
  readonly type: typeof COLLECT;
  readonly id: string;
}

interface Collected {
  readonly type: typeof COLLECTED;
  readonly id: string;
  readonly metrics: readonly MetricsJson[];
}

function hasType<T extends { readonly type: string; readonly id: string }>(
  message: unknown,
  type: T['type'],
): message is T {
  const candidate = message as { type?: unknown; id?: unknown } | null;
  return candidate?.type === type && typeof candidate.id === 'string';
}

/**
 * In a worker: answers the primary's requests for this process's metrics with what `local` gives, and returns the function `/metrics` uses to answer the whole cluster's.
 */
export function workerMetricsSource(
  local: () => Promise<readonly MetricsJson[]>,
): (format: MetricsFormat) => Promise<string> {
  const waiting = new Map<string, { resolve: (text: string) => void; reject: (error: Error) => void }>();
  const send = (message: Collected | Ask) => process.send?.(message, undefined, {}, () => undefined);
  process.on('message', (message: unknown) => {
    if (hasType<Collect>(message, COLLECT)) {
      local().then(
        (metrics) => send({ type: COLLECTED, id: message.id, metrics }),
        // Nothing to add: the primary answers with the other workers' metrics.
        () => send({ type: COLLECTED, id: message.id, metrics: [] }),
      );
      return;
    }
    if (!hasType<Answer>(message, ANSWER)) return;
    const pending = waiting.get(message.id);
    if (pending === undefined) return;
    waiting.delete(message.id);
    if (message.text !== undefined) pending.resolve(message.text);
    else pending.reject(new Error(`metrics of the cluster: ${message.error ?? 'no answer'}`));
  });
  return (format) =>
    new Promise((resolve, reject) => {
      const id = randomUUID();
      const timer = setTimeout(() => {
        waiting.delete(id);
        reject(new Error(`metrics of the cluster: the primary did not answer within ${ASK_TIMEOUT_MS} ms`));
      }, ASK_TIMEOUT_MS);
      waiting.set(id, {
        resolve: (text) => {
          clearTimeout(timer);
          resolve(text);
        },
        reject: (error) => {
          clearTimeout(timer);
          reject(error);
        },
      });
      send({ type: ASK, id, format });
    });
}

/** The primary's requests for workers' own metrics that wait for an answer, by request id. */
interface Collecting {
  readonly worker: Worker;
  readonly finish: (metrics: readonly MetricsJson[] | null) => void;
}

/** Asks one worker for its metrics: its answer, or null if it dies or stays silent for COLLECT_TIMEOUT_MS. */
function collectFrom(
  worker: Worker,
  collecting: Map<string, Collecting>,
): Promise<readonly MetricsJson[] | null> {
  return new Promise((resolve) => {
    const id = randomUUID();
    const finish = (metrics: readonly MetricsJson[] | null) => {
      if (!collecting.delete(id)) return;
      clearTimeout(timer);
      resolve(metrics);
    };
    const timer = setTimeout(() => finish(null), COLLECT_TIMEOUT_MS);
    collecting.set(id, { worker, finish });
    if (!worker.isConnected()) {
      finish(null);
      return;
    }
    worker.send({ type: COLLECT, id } satisfies Collect, undefined, (error: Error | null) => {
      if (error) finish(null);
    });
  });
}

/**
 * In the primary: answers the workers' requests for the cluster's metrics. `serving` lists the workers
 * that listen (the ones asked); `configured` is how many the cluster runs when all are up.
 */
export function serveClusterMetrics(serving: () => readonly Worker[], configured: number): void {
  const own = new Registry();
  new Gauge({
    name: 'agentstate_cluster_workers',
    help: 'Worker processes the cluster runs when all are up (serve --workers)',
    registers: [own],
  }).set(configured);
  const reporting = new Gauge({
    name: 'agentstate_cluster_workers_reporting',
    help: 'Worker processes whose metrics this answer sums (one restarting or silent is left out)',
    registers: [own],
  });
  const collecting = new Map<string, Collecting>();
  cluster.on('message', (_worker: Worker, message: unknown) => {
    if (hasType<Collected>(message, COLLECTED)) collecting.get(message.id)?.finish(message.metrics);
  });
  // A worker that dies has nothing more to say: its requests end at once rather than at their timeout.
  cluster.on('exit', (worker: Worker) => {
    for (const request of [...collecting.values()]) if (request.worker === worker) request.finish(null);
  });
  const gather = async (format: MetricsFormat): Promise<string> => {
    const answers = await Promise.all(serving().map((worker) => collectFrom(worker, collecting)));
    const got = answers.filter((metrics): metrics is readonly MetricsJson[] => metrics !== null);
    reporting.set(got.length);
    const all = [(await own.getMetricsAsJSON()) as MetricsJson, ...got.flat()];
    return renderSummed(all, format);
  };
  // The asking worker may have died while the others answered: never send on a closed channel (its error
  // would be unhandled in the primary and take the whole cluster down).
  const answer = (worker: Worker, reply: Answer) => {
    if (!worker.isConnected()) return;
    worker.send(reply, undefined, () => undefined);
  };
  cluster.on('message', (worker: Worker, message: unknown) => {
    if (!hasType<Ask>(message, ASK)) return;
    gather(message.format === 'openmetrics' ? 'openmetrics' : 'prometheus').then(
      (text) => answer(worker, { type: ANSWER, id: message.id, text }),
      (error: unknown) =>
        answer(worker, {
          type: ANSWER,
          id: message.id,
          error: error instanceof Error ? error.message : String(error),
        }),
    );
  });
}
