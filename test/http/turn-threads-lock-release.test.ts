/**
 * A turn thread that dies holding the SQLite write lock of `serve --turn-threads` frees it as it exits, so the
 * other threads and the main thread go on writing. The thread here is a real worker started by
 * startTurnThreads; an agents module takes the lock in it, holds it long enough to be seen holding it, and
 * ends the thread before it is ready.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { TurnRunner } from '../../src/http/turn-runner.js';
import { startTurnThreads } from '../../src/http/turn-threads/pool.js';
import { ThreadWriteLock, writeLockBuffer } from '../../src/store/sqlite/thread-write-lock.js';
import { tempDir } from '../cli/run.js';

const tmp = tempDir();
afterAll(() => tmp.cleanup());

/** The main thread's runner: never asked here, since the only thread never becomes ready. */
const neverAsked = (): Promise<never> => Promise.reject(new Error('the main thread runner is not used here'));
const mainRunner: TurnRunner = { runTurn: neverAsked, resume: neverAsked, checkpoints: neverAsked };

describe('turn threads and the SQLite write lock', { timeout: 60_000 }, () => {
  it('frees the lock a thread held when it died', async () => {
    const db = join(tmp.dir, 'turns.db');
    // Made before the threads start, so they share it (as serve's main thread does with its store's).
    const word = new Int32Array(writeLockBuffer(db));
    const lockModule = new URL('../../src/store/sqlite/thread-write-lock.ts', import.meta.url).href;
    const agents = join(tmp.dir, 'grab-and-die.mjs');
    writeFileSync(
      agents,
      [
        "import { isMainThread } from 'node:worker_threads';",
        `import { ThreadWriteLock, writeLockBuffer } from ${JSON.stringify(lockModule)};`,
        'if (!isMainThread) {',
        `  await new ThreadWriteLock(writeLockBuffer(${JSON.stringify(db)})).acquire();`,
        '  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 300);',
        '  process.exit(3);',
        '}',
        'export const agents = [];',
        '',
      ].join('\n'),
    );
    const starting = startTurnThreads({
      threads: 1,
      storeUrl: `sqlite:${db}`,
      dataDir: join(tmp.dir, 'data'),
      agentsModule: agents,
      airlineUrl: 'http://127.0.0.1:9',
      local: mainRunner,
    });
    const refused = expect(starting).rejects.toThrow(/exited with 3 before it was ready/);
    // The thread holds the very lock this thread waits on (the word names its holder)...
    const deadline = Date.now() + 30_000;
    while (Atomics.load(word, 0) === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 2));
    expect(Atomics.load(word, 0)).toBeGreaterThan(1);
    await refused;
    // ...and it is free again once the thread has died.
    const lock = new ThreadWriteLock(writeLockBuffer(db));
    await lock.acquire();
    expect(Atomics.load(word, 0)).toBe(1);
    lock.release();
  });
});
