/**
 * Turns on several cores in one server process (`serve --turn-threads N`): N worker threads, each with its
 * own store connection and agent runtime (thread-main.ts), run the turns; the main thread keeps HTTP,
 * authentication and every other route. A turn goes to the thread with the fewest turns in flight (of
 * those, the one that ran the session's last turn), so a burst of heavy turns (bookings, each waiting for
 * a downstream service) spreads over the cores instead of queueing on one. What a turn may do is unchanged:
 * a session's lease still keeps two turns of it from running at once, whichever threads they land on, and
 * on SQLite the threads' writes take one lock in shared memory (thread-write-lock.ts) instead of retrying
 * on SQLITE_BUSY. Each thread builds its runtime from the same agents modules as the main thread
 * (agents-modules.ts), so its tools call the same downstream services.
 *
 * A thread that dies (it should not) fails the turns it was running with `internal` and is started again.
 */

import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { AgentStateError } from '../../core/errors.js';
import { RecentMap } from '../../core/recent-map.js';
import { traceparentOf } from '../../observability/tracing.js';
import type { RunRecoveryOptions } from '../../runtime/run-marks.js';
import { announceRunEvents, markLocalRun, runWaitersBuffer } from '../../runtime/run-notify.js';
import { releaseHeldBy, writeLockBuffers } from '../../store/sqlite/thread-write-lock.js';
import type { Scope } from '../../store/types.js';
import type { AgentsModuleRef } from '../agents-modules.js';
import { applyServerHeapPolicyToNewThreads } from '../heap-policy.js';
import { type ModelsSpec, RULES_ONLY } from '../models.js';
import type { SessionRef, TurnCallOptions, TurnResponse, TurnRunner } from '../turn-runner.js';
import { type FromThread, receivedError, type ToThread, type TurnThreadData } from './protocol.js';

export interface TurnThreadsOptions {
  readonly threads: number;
  readonly storeUrl: string;
  /**
   * The agents modules every thread builds its runtime from, with their options: the main thread's, so
   * that every thread's tools call the same downstream services.
   */
  readonly modules: readonly AgentsModuleRef[];
  /** The models every thread's turns run with (models.ts): the main thread's. Default: `rules` only. */
  readonly models?: ModelsSpec;
  /** The main thread's own runner: agent names, checkpoints and context are read there. */
  readonly local: TurnRunner;
  /** Told when a thread stops unexpectedly (it is started again). */
  readonly onThreadExit?: (index: number, reason: string) => void;
  /** The server instance, when its runs are marked for recovery (RuntimeOptions.recovery). */
  readonly recovery?: RunRecoveryOptions;
}

export interface TurnThreads extends TurnRunner {
  readonly size: number;
  /** Every thread's metrics (prom-client's JSON form), to add to the main thread's. */
  metricsJson(): Promise<unknown[]>;
  /** Lets the threads finish the turns they run, then stops them. Safe to call twice. */
  close(): Promise<void>;
}

export const MAX_TURN_THREADS = 64;
const START_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 30_000;
const METRICS_TIMEOUT_MS = 5_000;
/** Sessions whose last thread is remembered (the most recent ones). */
const MAX_REMEMBERED_SESSIONS = 10_000;

interface Pending {
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: Error) => void;
  /** A turn (or resume), as against a request for metrics: only turns count as the thread's load. */
  readonly turn: boolean;
  /** A turn's run has started (TurnCallOptions.onRun). */
  readonly onRun?: (runId: string) => void;
  /** The turn's session, and what ends its run's mark as heard of here (run-notify.ts markLocalRun). */
  readonly sessionId?: string;
  heard?: () => void;
}

/** The thread's entry: the built module, or from the sources (tests) a bootstrap that loads it through tsx. */
function threadEntry(): { code: string; eval: boolean } {
  const here = import.meta.url;
  if (here.endsWith('.ts')) {
    // tsx, found from here (not the cwd), registers its loader in the thread before the module is imported.
    // (its `import` export: require.resolve finds the CommonJS one, which cannot register from a thread)
    const api = createRequire(here)
      .resolve('tsx/esm/api')
      .replace(/index\.cjs$/, 'index.mjs');
    const tsx = pathToFileURL(api).href;
    const entry = new URL('./thread-main.ts', here).href;
    const code = `import(${JSON.stringify(tsx)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(entry)}); });`;
    return { code, eval: true };
  }
  const file = fileURLToPath(new URL('./thread-main.js', here));
  if (!existsSync(file)) throw new Error(`turn threads: the thread entry ${file} is missing`);
  return { code: file, eval: false };
}

class TurnThread {
  readonly pending = new Map<number, Pending>();
  /** Turns sent and not yet answered. */
  load = 0;
  /** The error the thread died of, if it did. */
  crash = '';
  private constructor(
    readonly worker: Worker,
    readonly exited: Promise<number>,
  ) {}

  static start(data: TurnThreadData, onMessage: (thread: TurnThread, message: FromThread) => void) {
    const entry = threadEntry();
    const worker = new Worker(entry.code, { workerData: data, eval: entry.eval });
    // Read now: once the thread has stopped, `worker.threadId` is -1.
    const id = worker.threadId;
    // A thread that died holding the SQLite write lock (before it was ready too) must not keep the others
    // waiting for it: freed before anything else hears of the exit.
    const exited = new Promise<number>((resolve) =>
      worker.once('exit', (code) => {
        releaseHeldBy(id);
        resolve(code);
      }),
    );
    const thread = new TurnThread(worker, exited);
    // Listened to for the thread's whole life: an 'error' event nobody listens to would end the process.
    worker.on('error', (error) => {
      thread.crash = error.message;
    });
    const ready = new Promise<TurnThread>((resolve, reject) => {
      const timer = setTimeout(() => {
        void worker.terminate();
        reject(new Error(`a turn thread did not start within ${START_TIMEOUT_MS / 1000} s`));
      }, START_TIMEOUT_MS);
      const failed = (error: Error) => {
        clearTimeout(timer);
        reject(error);
      };
      worker.once('error', failed);
      void exited.then((code) => failed(new Error(`a turn thread exited with ${code} before it was ready`)));
      worker.on('message', (message: FromThread) => {
        if (message.type === 'ready') {
          clearTimeout(timer);
          worker.off('error', failed);
          resolve(thread);
        } else if (message.type === 'failed') {
          failed(receivedError(message.error));
        } else {
          onMessage(thread, message);
        }
      });
    });
    return ready;
  }

  send(message: ToThread): void {
    this.worker.postMessage(message);
  }
}

export async function startTurnThreads(options: TurnThreadsOptions): Promise<TurnThreads> {
  if (!Number.isInteger(options.threads) || options.threads < 1 || options.threads > MAX_TURN_THREADS) {
    throw new Error(`turn threads: the count must be a whole number from 1 to ${MAX_TURN_THREADS}`);
  }
  applyServerHeapPolicyToNewThreads();
  const data: TurnThreadData = {
    storeUrl: options.storeUrl,
    modules: options.modules,
    models: options.models ?? RULES_ONLY,
    writeLocks: writeLockBuffers(),
    runWaiters: runWaitersBuffer(),
    ...(options.recovery === undefined ? {} : { recovery: options.recovery }),
  };
  const threads: (TurnThread | null)[] = [];
  let nextId = 1;
  let closing: Promise<void> | null = null;

  /** Turns waiting for a thread to be started again (when none is running). */
  const waiters: (() => void)[] = [];

  const onMessage = (thread: TurnThread, message: FromThread) => {
    if (message.type === 'events') {
      announceRunEvents(message.sessionId, message.runId);
      return;
    }
    if (message.type === 'run') {
      const pending = thread.pending.get(message.id);
      if (pending === undefined) return;
      pending.heard?.();
      pending.heard = markLocalRun(pending.sessionId ?? '', message.runId);
      pending.onRun?.(message.runId);
      return;
    }
    if (message.type !== 'done' && message.type !== 'error' && message.type !== 'metrics') return;
    const pending = thread.pending.get(message.id);
    if (pending === undefined) return;
    thread.pending.delete(message.id);
    pending.heard?.();
    if (pending.turn) thread.load--;
    if (message.type === 'error') pending.reject(receivedError(message.error));
    else pending.resolve(message.value);
  };

  const watch = (index: number, thread: TurnThread) => {
    void thread.exited.then(async (code) => {
      for (const pending of thread.pending.values()) {
        pending.heard?.();
        pending.reject(new AgentStateError('internal', 'the turn thread running this turn stopped'));
      }
      thread.pending.clear();
      thread.load = 0;
      if (threads[index] !== thread) return;
      threads[index] = null;
      if (closing !== null) return;
      options.onThreadExit?.(index, thread.crash || `exit code ${code}`);
      try {
        const again = await TurnThread.start(data, onMessage);
        if (closing !== null) {
          again.send({ type: 'close' });
          return;
        }
        threads[index] = again;
        watch(index, again);
      } catch (error) {
        options.onThreadExit?.(index, `could not start again: ${(error as Error).message}`);
      } finally {
        for (const waiter of waiters.splice(0)) waiter();
      }
    });
  };

  const started = await Promise.allSettled(
    Array.from({ length: options.threads }, () => TurnThread.start(data, onMessage)),
  );
  for (const result of started) {
    if (result.status === 'fulfilled') threads.push(result.value);
  }
  const failure = started.find((result) => result.status === 'rejected');
  if (failure !== undefined) {
    await Promise.all(threads.map((thread) => thread?.worker.terminate()));
    throw (failure as PromiseRejectedResult).reason;
  }
  threads.forEach((thread, index) => {
    if (thread !== null) watch(index, thread);
  });

  const ask = <T>(
    thread: TurnThread,
    turn: boolean,
    message: (id: number) => ToThread,
    onRun?: (runId: string) => void,
    sessionId?: string,
  ): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const id = nextId++;
      thread.pending.set(id, {
        resolve: resolve as (value: unknown) => void,
        reject,
        turn,
        ...(onRun === undefined ? {} : { onRun }),
        ...(sessionId === undefined ? {} : { sessionId }),
      });
      if (turn) thread.load++;
      thread.send(message(id));
    });

  // Ties go to the thread that ran the session's last turn: its caches (the run's last checkpoint, the
  // history the compaction check has counted) spare it reads the other thread would make. Other ties go
  // round the threads, so that each sees its share of every kind of turn (and its code is as warm).
  let next = 0;
  const lastThread = new RecentMap<string, number>(MAX_REMEMBERED_SESSIONS);
  const leastBusy = async (sessionId: string): Promise<TurnThread> => {
    // No thread running (the only one is being started again): wait for it rather than fail the turn.
    if (closing === null && threads.every((thread) => thread === null)) {
      await new Promise<void>((resolve) => {
        waiters.push(resolve);
        setTimeout(resolve, START_TIMEOUT_MS).unref();
      });
    }
    return pick(sessionId);
  };
  const pick = (sessionId: string): TurnThread => {
    let best: number | null = null;
    const last = lastThread.get(sessionId);
    const start = last ?? next++ % threads.length;
    for (let k = 0; k < threads.length; k++) {
      const index = (start + k) % threads.length;
      const thread = threads[index] ?? null;
      if (thread !== null && (best === null || thread.load < (threads[best]?.load ?? 0))) best = index;
    }
    if (closing !== null) {
      throw new AgentStateError('store_unavailable', 'the server is stopping: it takes no new turns');
    }
    const thread = best === null ? null : (threads[best] ?? null);
    if (best === null || thread === null) {
      throw new AgentStateError(
        'store_unavailable',
        'no turn thread is running: one could not be started again',
      );
    }
    // Most recent last, so the oldest session is the first to be forgotten.
    lastThread.set(sessionId, best);
    return thread;
  };

  const dispatch = async (
    scope: Scope,
    session: SessionRef,
    input: string | null,
    call: TurnCallOptions = {},
  ): Promise<TurnResponse> => {
    // The request's span, which the thread's spans of the turn go under (when traced).
    const tp = traceparentOf();
    const traced = tp === null ? {} : { traceparent: tp };
    const thread = await leastBusy(session.id);
    const onBusy = {
      ...(call.onBusy === undefined ? {} : { onBusy: call.onBusy }),
      ...(call.requestKey === undefined ? {} : { requestKey: call.requestKey }),
      ...(call.onRun === undefined ? {} : { onRun: true as const }),
    };
    return ask<TurnResponse>(
      thread,
      true,
      (id) =>
        input === null
          ? { type: 'resume', id, scope, session, ...traced }
          : { type: 'turn', id, scope, session, input, ...onBusy, ...traced },
      call.onRun,
      session.id,
    );
  };

  const { local } = options;
  return {
    size: options.threads,
    ...(local.agentNames ? { agentNames: () => local.agentNames?.() ?? [] } : {}),
    ...(local.modelNames ? { modelNames: local.modelNames.bind(local) } : {}),
    ...(local.modelFor ? { modelFor: local.modelFor.bind(local) } : {}),
    runTurn: (scope, session, input, call) => dispatch(scope, session, input, call),
    resume: (scope, session) => dispatch(scope, session, null),
    checkpoints: (scope, session, limit, before) => local.checkpoints(scope, session, limit, before),
    ...(local.context ? { context: local.context.bind(local) } : {}),
    ...(local.openTasks ? { openTasks: local.openTasks.bind(local) } : {}),
    async metricsJson() {
      const live = threads.filter((thread): thread is TurnThread => thread !== null);
      const answers = await Promise.all(
        live.map((thread) =>
          Promise.race([
            // A thread that dies meanwhile adds nothing (its counts went with it).
            ask<unknown[]>(thread, false, (id) => ({ type: 'metrics', id })).catch(() => []),
            new Promise<unknown[]>((resolve) => setTimeout(() => resolve([]), METRICS_TIMEOUT_MS).unref()),
          ]),
        ),
      );
      return answers;
    },
    close() {
      closing ??= (async () => {
        for (const waiter of waiters.splice(0)) waiter();
        const live = threads.filter((thread): thread is TurnThread => thread !== null);
        await Promise.all(
          live.map(async (thread) => {
            thread.send({ type: 'close' });
            const timer = setTimeout(() => void thread.worker.terminate(), STOP_TIMEOUT_MS);
            await thread.exited;
            clearTimeout(timer);
          }),
        );
      })();
      return closing;
    },
  };
}
