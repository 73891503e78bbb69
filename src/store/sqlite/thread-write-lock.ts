/**
 * One write lock per SQLite file for every thread of this process (the turn threads of `serve
 * --turn-threads` and the main thread each have a connection of their own). SQLite lets one connection
 * write at a time; without this a second thread's BEGIN IMMEDIATE would meet SQLITE_BUSY and retry on a
 * timer (lock-wait.ts: 1 ms and more). Here it waits on an Atomics word in shared memory and goes on the
 * moment the holder lets go, with its event loop free meanwhile (Atomics.waitAsync). Other processes on
 * the same file still meet SQLite's own lock, as before.
 *
 * The word holds 0 when free, else the holder's thread id + 1, so that a thread that died holding it can be
 * cleared by the thread that started it (`releaseHeldBy`).
 */
import { resolve } from 'node:path';
import { threadId } from 'node:worker_threads';

const FREE = 0;
const buffers = new Map<string, SharedArrayBuffer>();

function keyOf(file: string): string {
  return resolve(file);
}

/** The shared word of `file`'s lock in this thread, created on first use. */
export function writeLockBuffer(file: string): SharedArrayBuffer {
  const key = keyOf(file);
  let buffer = buffers.get(key);
  if (buffer === undefined) {
    buffer = new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT);
    buffers.set(key, buffer);
  }
  return buffer;
}

/** Every lock this thread knows, to hand to a thread it starts (as workerData). */
export function writeLockBuffers(): [string, SharedArrayBuffer][] {
  return [...buffers.entries()];
}

/** In a started thread: use the locks of the thread that started it. */
export function adoptWriteLockBuffers(entries: readonly (readonly [string, SharedArrayBuffer])[]): void {
  for (const [file, buffer] of entries) buffers.set(keyOf(file), buffer);
}

/** Frees every lock the (dead) thread `id` holds, waking one waiter of each. */
export function releaseHeldBy(id: number): void {
  for (const buffer of buffers.values()) {
    const word = new Int32Array(buffer);
    if (Atomics.compareExchange(word, 0, id + 1, FREE) === id + 1) Atomics.notify(word, 0, 1);
  }
}

export class ThreadWriteLock {
  private readonly word: Int32Array;
  private readonly mine = threadId + 1;

  constructor(buffer: SharedArrayBuffer) {
    this.word = new Int32Array(buffer);
  }

  /** Resolves once this thread holds the lock. A thread must not ask twice before it releases. */
  async acquire(): Promise<void> {
    for (;;) {
      const held = Atomics.compareExchange(this.word, 0, FREE, this.mine);
      if (held === FREE) return;
      const waiting = Atomics.waitAsync(this.word, 0, held);
      if (!waiting.async) continue;
      // A wait in Atomics.waitAsync does not keep the event loop alive: a thread with nothing else to do
      // (one still opening its store, say) would end right here, in the middle of its work.
      const keepAlive = setInterval(() => {}, 2 ** 30);
      try {
        await waiting.value;
      } finally {
        clearInterval(keepAlive);
      }
    }
  }

  release(): void {
    if (Atomics.compareExchange(this.word, 0, this.mine, FREE) === this.mine) Atomics.notify(this.word, 0, 1);
  }

  /** Runs `section` holding the lock. */
  async run<T>(section: () => Promise<T> | T): Promise<T> {
    await this.acquire();
    try {
      return await section();
    } finally {
      this.release();
    }
  }
}
