/**
 * A turn thread of `serve --turn-threads N`: its own store connection and agent runtime, running the turns
 * the main thread hands it (pool.ts) and answering with their results. The main thread keeps HTTP,
 * authentication and every other route; turns, the heaviest work, go on the machine's other cores.
 */
import { type MessagePort, parentPort, workerData } from 'node:worker_threads';
import { instrumentStore } from '../../observability/instrumented-store.js';
import { createMetrics } from '../../observability/metrics.js';
import { meteredModel } from '../../observability/model-metrics.js';
import { underTraceparent } from '../../observability/tracing.js';
import { startTracing } from '../../observability/tracing-setup.js';
import { adoptRunWaiters, onRunEvents, runWaitersNow } from '../../runtime/run-notify.js';
import { openStore } from '../../store/open.js';
import { adoptWriteLockBuffers } from '../../store/sqlite/thread-write-lock.js';
import { type LinkedAgents, linkAgentsModules } from '../agents-modules.js';
import { buildModelRegistry } from '../models.js';
import { createRuntimeTurnRunner } from '../runtime-runner.js';
import type { TurnResponse } from '../turn-runner.js';
import { type FromThread, sendableError, type ToThread, type TurnThreadData } from './protocol.js';

if (parentPort === null) throw new Error('thread-main.ts runs as a worker thread of pool.ts');
const port: MessagePort = parentPort;
const data = workerData as TurnThreadData;
const send = (message: FromThread) => port.postMessage(message);
/**
 * A thread's SQLite connection checkpoints the WAL after its own commits only (every 128), never on a
 * timer: the main thread's connection checkpoints on its interval already, and each checkpoint ends in an
 * fsync of the database file, which the commits of every thread may have to wait behind.
 */
const THREAD_CHECKPOINT_MS = 2 ** 31 - 1;

async function start(): Promise<void> {
  adoptWriteLockBuffers(data.writeLocks);
  adoptRunWaiters(data.runWaiters);
  // The thread's own tracer provider (a worker has its own globals), before its store is made.
  const tracing = await startTracing(process.env, { http: false });
  const metrics = createMetrics({ processMetrics: false });
  const store = instrumentStore(
    await openStore(data.storeUrl, {
      postgresWarmPool: true,
      sqliteCheckpointMs: THREAD_CHECKPOINT_MS,
    }),
    metrics,
  );
  let runtime: LinkedAgents;
  try {
    runtime = await linkAgentsModules(
      data.modules,
      buildModelRegistry(data.models, (model) => meteredModel(model, metrics)),
    );
  } catch (error) {
    await store.close();
    throw error;
  }
  const setup = data.recovery === undefined ? runtime.setup : { ...runtime.setup, recovery: data.recovery };
  const runner = createRuntimeTurnRunner(store, setup, data.models);
  const inFlight = new Set<Promise<void>>();
  const answer = (id: number, work: () => Promise<TurnResponse>) => {
    const running = work().then(
      (value) => send({ type: 'done', id, value }),
      (error: unknown) => send({ type: 'error', id, error: sendableError(error) }),
    );
    inFlight.add(running);
    void running.finally(() => inFlight.delete(running));
  };
  // Nobody on the main thread waiting for run events: no message (a follower that starts later reads the
  // store after it has begun to wait, and so sees what was stored before).
  onRunEvents((sessionId, runId) => {
    if (runWaitersNow()) send({ type: 'events', sessionId, runId });
  });
  port.on('message', (message: ToThread) => {
    switch (message.type) {
      case 'turn':
        answer(message.id, () =>
          underTraceparent(message.traceparent, () =>
            runner.runTurn(message.scope, message.session, message.input, {
              ...(message.onBusy === undefined ? {} : { onBusy: message.onBusy }),
              ...(message.requestKey === undefined ? {} : { requestKey: message.requestKey }),
              onRun: (runId) => {
                if (message.onRun === true || runWaitersNow()) send({ type: 'run', id: message.id, runId });
              },
            }),
          ),
        );
        return;
      case 'resume':
        answer(message.id, () =>
          underTraceparent(message.traceparent, () => runner.resume(message.scope, message.session)),
        );
        return;
      case 'metrics':
        void metrics.registry
          .getMetricsAsJSON()
          .then((value) => send({ type: 'metrics', id: message.id, value }));
        return;
      case 'close':
        void (async () => {
          await Promise.allSettled([...inFlight]);
          await store.close();
          await tracing?.shutdown();
          port.close();
        })();
        return;
    }
  });
  send({ type: 'ready' });
}

start().catch((error: unknown) => {
  send({ type: 'failed', error: sendableError(error) });
  port.close();
});
