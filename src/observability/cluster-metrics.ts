/**
 * Metrics of a server run as several worker processes (`agentstate serve --workers N`). Each worker keeps
 * its own registry; `GET /metrics` on any worker answers the sum over all of them, which the primary
 * gathers with prom-client's AggregatorRegistry: the worker asks the primary over the cluster's IPC channel,
 * the primary asks every worker for its registry and merges them (counters and histograms add up; the
 * active-sessions gauge is set by one worker only, the one that sweeps).
 */
import cluster, { type Worker } from 'node:cluster';
import { randomUUID } from 'node:crypto';
import { AggregatorRegistry, type Registry } from 'prom-client';

const ASK = 'agentstate:metrics';
const ANSWER = 'agentstate:metrics:answer';
const TIMEOUT_MS = 5_000;

interface Ask {
  readonly type: typeof ASK;
  readonly id: string;
}

interface Answer {
  readonly type: typeof ANSWER;
  readonly id: string;
  readonly text?: string;
  readonly error?: string;
}

function isAsk(message: unknown): message is Ask {
  return (message as Ask | null)?.type === ASK && typeof (message as Ask).id === 'string';
}

function isAnswer(message: unknown): message is Answer {
  return (message as Answer | null)?.type === ANSWER && typeof (message as Answer).id === 'string';
}

/**
 * In a worker: lets the primary read `registry`, and returns the function `/metrics` uses to answer the
 * whole cluster's metrics.
 */
export function workerMetricsSource(registry: Registry): () => Promise<string> {
  AggregatorRegistry.setRegistries([registry]);
  // prom-client starts answering the primary's requests once an AggregatorRegistry exists in the process.
  new AggregatorRegistry();
  const waiting = new Map<string, { resolve: (text: string) => void; reject: (error: Error) => void }>();
  process.on('message', (message: unknown) => {
    if (!isAnswer(message)) return;
    const pending = waiting.get(message.id);
    if (pending === undefined) return;
    waiting.delete(message.id);
    if (message.text !== undefined) pending.resolve(message.text);
    else pending.reject(new Error(`metrics of the cluster: ${message.error ?? 'no answer'}`));
  });
  return () =>
    new Promise((resolve, reject) => {
      const id = randomUUID();
      const timer = setTimeout(() => {
        waiting.delete(id);
        reject(new Error(`metrics of the cluster: the primary did not answer within ${TIMEOUT_MS} ms`));
      }, TIMEOUT_MS);
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
      process.send?.({ type: ASK, id } satisfies Ask);
    });
}

/** In the primary: answers the workers' requests for the cluster's metrics. */
export function serveClusterMetrics(): void {
  const aggregator = new AggregatorRegistry();
  // The asking worker may have died while the others answered: never send on a closed channel (its error
  // would be unhandled in the primary and take the whole cluster down).
  const answer = (worker: Worker, reply: Answer) => {
    if (!worker.isConnected()) return;
    worker.send(reply, undefined, () => undefined);
  };
  cluster.on('message', (worker: Worker, message: unknown) => {
    if (!isAsk(message)) return;
    aggregator.clusterMetrics().then(
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
