/**
 * The SQLite write lock shared by the threads of one process (src/store/sqlite/thread-write-lock.ts), with
 * real worker threads: it excludes the other threads across awaits, hands over at once, and a thread that
 * died holding it can be cleared by the thread that started it. Then two threads' SQLite connections on one
 * file write concurrently without one SQLITE_BUSY retry.
 */
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { afterAll, describe, expect, it } from 'vitest';
import {
  releaseHeldBy,
  ThreadWriteLock,
  writeLockBuffer,
  writeLockBuffers,
} from '../../src/store/sqlite/thread-write-lock.js';
import { tempDir } from '../cli/run.js';

const tsx = pathToFileURL(
  createRequire(import.meta.url)
    .resolve('tsx/esm/api')
    .replace(/index\.cjs$/, 'index.mjs'),
).href;
const tmp = tempDir();
afterAll(() => tmp.cleanup());

function startThread(data: Record<string, unknown>): { worker: Worker; said: Promise<string> } {
  const entry = new URL('./fixtures/lock-thread.ts', import.meta.url).href;
  const code = `import(${JSON.stringify(tsx)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(entry)}); });`;
  const worker = new Worker(code, { eval: true, workerData: data });
  const said = new Promise<string>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  return { worker, said };
}

describe('ThreadWriteLock', { timeout: 60_000 }, () => {
  it('lets one thread at a time hold it across awaits: no update of a shared counter is lost', async () => {
    const file = join(tmp.dir, 'counter.db');
    writeLockBuffer(file);
    const counter = new SharedArrayBuffer(4);
    const rounds = 300;
    const threads = [0, 1, 2].map(() =>
      startThread({ file, locks: writeLockBuffers(), counter, rounds, hold: false }),
    );
    // The main thread takes part too.
    const lock = new ThreadWriteLock(writeLockBuffer(file));
    const count = new Int32Array(counter);
    for (let i = 0; i < rounds; i++) {
      await lock.run(async () => {
        const seen = Atomics.load(count, 0);
        await new Promise((resolve) => setImmediate(resolve));
        Atomics.store(count, 0, seen + 1);
      });
    }
    expect(await Promise.all(threads.map((t) => t.said))).toEqual(['done', 'done', 'done']);
    expect(Atomics.load(count, 0)).toBe(4 * rounds);
    await Promise.all(threads.map((t) => t.worker.terminate()));
  });

  it('keeps a thread that has nothing else to do alive while it waits', async () => {
    const file = join(tmp.dir, 'alive.db');
    const lock = new ThreadWriteLock(writeLockBuffer(file));
    await lock.acquire();
    const { worker, said } = startThread({
      file,
      locks: writeLockBuffers(),
      counter: new SharedArrayBuffer(4),
      rounds: 0,
      hold: false,
      wait: true,
    });
    const exited = new Promise<number>((resolve) => worker.once('exit', resolve));
    const early = await Promise.race([
      exited,
      new Promise((resolve) => setTimeout(() => resolve('waiting'), 500)),
    ]);
    expect(early).toBe('waiting');
    lock.release();
    expect(await said).toBe('got it');
    expect(await exited).toBe(0);
  });

  it('is freed for the others when the thread holding it dies and its starter clears it', async () => {
    const file = join(tmp.dir, 'dead.db');
    writeLockBuffer(file);
    const { worker, said } = startThread({
      file,
      locks: writeLockBuffers(),
      counter: new SharedArrayBuffer(4),
      rounds: 0,
      hold: true,
    });
    // Read before the thread ends: it exits as soon as it has said so, and a stopped worker's threadId is -1.
    const id = worker.threadId;
    expect(await said).toBe('holding');
    const lock = new ThreadWriteLock(writeLockBuffer(file));
    let got = false;
    const waiting = lock.acquire().then(() => {
      got = true;
    });
    await worker.terminate();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(got).toBe(false);
    releaseHeldBy(id);
    await waiting;
    expect(got).toBe(true);
    lock.release();
  });
});
