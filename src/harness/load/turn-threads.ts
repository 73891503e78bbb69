/**
 * The turns of a concurrent phase spread over worker threads of the load generator. One event loop for
 * 50 users times a turn from sending it to reading its answer: when several answers arrive together, or the
 * generator's own garbage collector runs, the answers wait in the generator, and that wait is counted as
 * the server's latency. Under load it is: a turn's answer was read up to 7 ms after the server had sent it,
 * which the baseline (one turn at a time) never pays. Each thread runs its share of the users with its own
 * event loop, heap and connections, as a k6 instance runs its virtual users on several cores.
 * The main thread opens the users (tokens, sessions) and keeps every exchange for the leak check.
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { type Exchange, keepExchange } from './http.js';
import type { Phase, SimUser, Target } from './user.js';

/** What a thread needs to go on with a user the main thread opened. */
export interface UserSeed {
  readonly phase: Phase;
  readonly index: number;
  readonly userId: string;
  readonly passengerName: string;
  readonly inputs: readonly string[];
  readonly token: string;
  readonly sessionId: string | null;
  /** When its first turn is sent, after the common start (its place in the ramp). */
  readonly startAfterMs: number;
}

export interface TurnsJob {
  readonly target: Target;
  readonly thinkMs: number;
  readonly users: readonly UserSeed[];
  /** The main thread's performance.timeOrigin: the thread gives its turn times in the main thread's clock. */
  readonly mainTimeOrigin: number;
}

/** What a thread learned of one user. */
export interface UserOutcome {
  readonly index: number;
  readonly exchanges: readonly Exchange[];
  readonly turns: readonly { readonly ms: number; readonly startedAt: number; readonly endedAt: number }[];
  readonly errors: readonly string[];
  readonly booked: boolean;
  readonly taskIds: readonly string[];
  readonly actionIds: readonly string[];
  readonly references: readonly string[];
}

export type ThreadMessage =
  | { readonly kind: 'ready' }
  | { readonly kind: 'turn'; readonly ms: number; readonly ok: boolean }
  | { readonly kind: 'done'; readonly users: readonly UserOutcome[] }
  | { readonly kind: 'failed'; readonly message: string };

export function userFromSeed(seed: UserSeed): SimUser {
  return {
    phase: seed.phase,
    index: seed.index,
    userId: seed.userId,
    passengerName: seed.passengerName,
    inputs: seed.inputs,
    token: seed.token,
    sessionId: seed.sessionId,
    taskIds: new Set(),
    actionIds: new Set(),
    references: new Set(),
    exchanges: [],
    turns: [],
    errors: [],
    booked: false,
  };
}

function merge(user: SimUser, outcome: UserOutcome): void {
  for (const exchange of outcome.exchanges) user.exchanges.push(keepExchange(exchange));
  user.turns.push(...outcome.turns);
  user.errors.push(...outcome.errors);
  if (outcome.booked) user.booked = true;
  for (const id of outcome.taskIds) user.taskIds.add(id);
  for (const id of outcome.actionIds) user.actionIds.add(id);
  for (const reference of outcome.references) user.references.add(reference);
}

/**
 * The worker's entry: the built module beside this one, or (running from the TypeScript sources, as the
 * tests do) the .ts module loaded through tsx in a small evaluated script.
 */
function startWorker(job: TurnsJob): Worker {
  const here = import.meta.url;
  if (here.endsWith('.js')) return new Worker(new URL('./turns-worker.js', here), { workerData: job });
  const tsx = pathToFileURL(
    join(dirname(createRequire(here).resolve('tsx/package.json')), 'dist/esm/api/index.mjs'),
  ).href;
  const entry = new URL('./turns-worker.ts', here).href;
  const script = `import(${JSON.stringify(tsx)}).then((api) => api.tsImport(${JSON.stringify(entry)}, ${JSON.stringify(entry)}));`;
  return new Worker(script, { eval: true, workerData: job });
}

export interface ThreadsOptions {
  readonly threads: number;
  readonly thinkMs: number;
  /** User i (of all) sends its first turn i x rampMs / users after the common start. */
  readonly rampMs: number;
  readonly onTurn?: (ms: number, ok: boolean) => void;
}

/** Runs every user's turns over `threads` worker threads (user i on thread i mod threads). */
export async function runTurnsInThreads(
  target: Target,
  users: readonly SimUser[],
  options: ThreadsOptions,
): Promise<void> {
  const count = Math.max(1, Math.min(options.threads, users.length));
  const seeds: UserSeed[][] = Array.from({ length: count }, () => []);
  users.forEach((user, i) => {
    seeds[i % count]?.push({
      phase: user.phase,
      index: user.index,
      userId: user.userId,
      passengerName: user.passengerName,
      inputs: user.inputs,
      token: user.token,
      sessionId: user.sessionId,
      startAfterMs: options.rampMs > 0 ? (i * options.rampMs) / users.length : 0,
    });
  });
  const byIndex = new Map(users.map((user) => [user.index, user]));
  const workers = seeds.map((share) =>
    startWorker({
      target: { url: target.url, apiKey: target.apiKey },
      thinkMs: options.thinkMs,
      users: share,
      mainTimeOrigin: performance.timeOrigin,
    }),
  );
  try {
    const ready: Promise<void>[] = [];
    const finished = workers.map((worker) => {
      let markReady: () => void = () => {};
      let failReady: (error: Error) => void = () => {};
      ready.push(
        new Promise<void>((resolve, reject) => {
          markReady = resolve;
          failReady = reject;
        }),
      );
      return new Promise<void>((resolve, reject) => {
        let done = false;
        const fail = (error: Error) => {
          failReady(error);
          reject(error);
        };
        worker.on('message', (message: ThreadMessage) => {
          if (message.kind === 'ready') markReady();
          else if (message.kind === 'turn') options.onTurn?.(message.ms, message.ok);
          else if (message.kind === 'failed') fail(new Error(`loadtest thread: ${message.message}`));
          else {
            for (const outcome of message.users) {
              const user = byIndex.get(outcome.index);
              if (user !== undefined) merge(user, outcome);
            }
            done = true;
            resolve();
          }
        });
        worker.once('error', fail);
        worker.once('exit', (code) => {
          if (!done) fail(new Error(`loadtest thread exited with ${code} before its users were done`));
        });
      });
    });
    // A thread that fails early fails `ready` too; the rejections of `finished` are seen below.
    for (const promise of finished) promise.catch(() => undefined);
    // Every thread has loaded its modules and opened nothing yet: the ramp starts for all at once.
    await Promise.all(ready);
    for (const worker of workers) worker.postMessage('go');
    await Promise.all(finished);
  } finally {
    await Promise.all(workers.map((worker) => worker.terminate()));
  }
}
