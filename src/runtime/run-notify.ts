/**
 * News of stored run events within this process: a run's event log announces each write it stored, and a
 * follower of the run (an HTTP stream) wakes at once instead of at its next poll. Followers in other
 * processes learn of the same events by reading the store, so nothing here is needed for correctness.
 */
import { EventEmitter } from 'node:events';

const news = new EventEmitter();
news.setMaxListeners(0);

const key = (sessionId: string, runId: string) => `${sessionId}\u0000${runId}`;

const listeners = new Set<(sessionId: string, runId: string) => void>();

/**
 * Waits of `runEventsOrTimeout` in progress in this thread, in shared memory: a turn thread adopts its main
 * thread's word (pool.ts) and passes announcements on only while something there waits for one. A waiter
 * is counted before it reads the store (it listens first), so a write announced while none waited is one
 * its read sees.
 */
let waiting = new Int32Array(new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT));

/** This thread's count of waiters, to hand to a turn thread it starts. */
export function runWaitersBuffer(): SharedArrayBuffer {
  return waiting.buffer as SharedArrayBuffer;
}

/** In a turn thread: count (and read) the waiters of the thread that started it. */
export function adoptRunWaiters(buffer: SharedArrayBuffer): void {
  waiting = new Int32Array(buffer);
}

/** Whether anything waits for news of a run right now (see `waiting`). */
export function runWaitersNow(): boolean {
  return Atomics.load(waiting, 0) > 0;
}
const local = new Map<string, number>();

/** Tells this process's followers of the run that it has new events stored. */
export function announceRunEvents(sessionId: string, runId: string): void {
  news.emit(key(sessionId, runId));
  for (const listener of listeners) listener(sessionId, runId);
}

/**
 * Calls `listener` on every announcement made here (a turn thread passes them on to the main thread's
 * followers); returns what stops it.
 */
export function onRunEvents(listener: (sessionId: string, runId: string) => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/**
 * Marks the run as running where this process hears of its writes (here, or on one of its turn threads)
 * until the returned function is called: its followers here need not poll the store often.
 */
export function markLocalRun(sessionId: string, runId: string): () => void {
  const name = key(sessionId, runId);
  local.set(name, (local.get(name) ?? 0) + 1);
  let done = false;
  return () => {
    if (done) return;
    done = true;
    const left = (local.get(name) ?? 1) - 1;
    if (left <= 0) local.delete(name);
    else local.set(name, left);
    // Its followers read once more: the run's last write may have come with its end.
    news.emit(name);
  };
}

export function isLocalRun(sessionId: string, runId: string): boolean {
  return local.has(key(sessionId, runId));
}

/**
 * Resolves when the run announces new events, or after `ms`, or when `signal` aborts; whichever is first.
 * Never rejects.
 */
export function runEventsOrTimeout(
  sessionId: string,
  runId: string,
  ms: number,
  signal?: AbortSignal,
): Promise<void> {
  return new Promise((resolve) => {
    const name = key(sessionId, runId);
    const counted = waiting;
    Atomics.add(counted, 0, 1);
    let over = false;
    const done = () => {
      if (over) return;
      over = true;
      Atomics.sub(counted, 0, 1);
      clearTimeout(timer);
      news.off(name, done);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    timer.unref();
    news.on(name, done);
    signal?.addEventListener('abort', done, { once: true });
  });
}
