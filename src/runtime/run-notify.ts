/**
 * News of stored run events within this process: a run's event log announces each write it stored, and a
 * follower of the run (an HTTP stream) wakes at once instead of at its next poll. Followers in other
 * processes learn of the same events by reading the store, so nothing here is needed for correctness.
 */
import { EventEmitter } from 'node:events';

const news = new EventEmitter();
news.setMaxListeners(0);

const key = (sessionId: string, runId: string) => `${sessionId}\u0000${runId}`;

/** Tells this process's followers of the run that it has new events stored. */
export function announceRunEvents(sessionId: string, runId: string): void {
  news.emit(key(sessionId, runId));
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
    const done = () => {
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
