/**
 * A worker thread of the load generator: runs the turns of its share of the users (opened by the main
 * thread), each starting at its place in the ramp, and sends back what each user saw. Started by
 * turn-threads.ts; it waits for `go` so that every thread starts the ramp at the same moment.
 */

import { setTimeout as sleep } from 'node:timers/promises';
import { parentPort, workerData } from 'node:worker_threads';
import type { Exchange } from './http.js';
import { type ThreadMessage, type TurnsJob, type UserOutcome, userFromSeed } from './turn-threads.js';
import { runTurns, type SimUser } from './user.js';

async function main(): Promise<void> {
  const port = parentPort;
  if (port === null) throw new Error('turns-worker: not started as a worker thread');
  const job = workerData as TurnsJob;
  // performance.now() of this thread counts from its own start: turn times go back in the main thread's.
  const shift = performance.timeOrigin - job.mainTimeOrigin;
  const users = job.users.map(userFromSeed);
  const go = new Promise<void>((resolve) => port.once('message', () => resolve()));
  port.postMessage({ kind: 'ready' } satisfies ThreadMessage);
  await go;
  const started = performance.now();
  await Promise.all(
    users.map(async (user, k) => {
      const seed = job.users[k];
      if (seed === undefined) return;
      const wait = started + seed.startAfterMs - performance.now();
      if (wait > 0) await sleep(wait);
      await runTurns(job.target, user, job.thinkMs, (ms, ok) =>
        port.postMessage({ kind: 'turn', ms, ok } satisfies ThreadMessage),
      );
    }),
  );
  port.postMessage({
    kind: 'done',
    users: users.map((user) => outcomeOf(user, shift)),
  } satisfies ThreadMessage);
}

function plain(exchange: Exchange): Exchange {
  const { method, path, sent, status, body, ms, error } = exchange;
  return error === undefined
    ? { method, path, sent, status, body, ms }
    : { method, path, sent, status, body, ms, error };
}

function outcomeOf(user: SimUser, shift: number): UserOutcome {
  return {
    index: user.index,
    exchanges: user.exchanges.map(plain),
    turns: user.turns.map((t) => ({ ms: t.ms, startedAt: t.startedAt + shift, endedAt: t.endedAt + shift })),
    errors: user.errors,
    booked: user.booked,
    taskIds: [...user.taskIds],
    actionIds: [...user.actionIds],
    references: [...user.references],
  };
}

main().catch((error: unknown) => {
  parentPort?.postMessage({
    kind: 'failed',
    message: error instanceof Error ? (error.stack ?? error.message) : String(error),
  } satisfies ThreadMessage);
});
