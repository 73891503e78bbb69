/**
 * WAL checkpoints off the event loop. Left to itself, the connection that commits a transaction crossing
 * the WAL's page threshold copies the whole WAL into the database file (and fsyncs it) before the commit
 * returns: a stall of several ms (4-7 ms here, every 15 turns or so) for every request the process has in
 * flight. Here a worker thread with a connection of its own runs a PASSIVE checkpoint when asked
 * (`request()`, which the writing connection calls every so many commits) and every `intervalMs`, which
 * copies what is committed while the main connection goes on reading and writing; the main connection's
 * own automatic checkpoint is raised to a fallback threshold that only acts if the worker falls far behind
 * or has stopped.
 *
 * Checkpoints are kept rare on purpose: once one has copied the whole WAL, the next commit starts the WAL
 * over, and with `synchronous=NORMAL` SQLite fsyncs the WAL's new header in that commit, on the event
 * loop (0.3-1 ms here). A checkpoint every 25 ms made nearly every turn pay that fsync.
 *
 * The worker is plain CommonJS evaluated in the thread (`eval`), so it runs the same under Node, tsx and
 * the test runner, and loads the same better-sqlite3 as this module.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type { SqliteSynchronous } from './driver.js';

export interface BackgroundCheckpointOptions {
  /** The worker's own timer: a checkpoint at least this often, besides those `request()` asks for. */
  readonly intervalMs: number;
  readonly synchronous: SqliteSynchronous;
  /** Told once when the worker stops on its own (it could not open the file, say). */
  readonly onStopped?: (error: Error) => void;
}

export interface BackgroundCheckpoints {
  /** Asks for a checkpoint now (it runs in the worker; this returns at once). */
  request(): void;
  /** Runs a last checkpoint, closes the worker's connection and ends the thread. Safe to call twice. */
  stop(): Promise<void>;
}

const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file, { fileMustExist: true });
db.pragma('busy_timeout = 0');
db.pragma('synchronous = ' + workerData.synchronous);
const checkpoint = () => {
  try {
    db.pragma('wal_checkpoint(PASSIVE)');
  } catch {
    // busy (another checkpointer) or the file went away: the next tick tries again
  }
};
const timer = setInterval(checkpoint, workerData.intervalMs);
parentPort.on('message', (message) => {
  if (message === 'checkpoint') checkpoint();
  if (message !== 'stop') return;
  clearInterval(timer);
  checkpoint();
  db.close();
  parentPort.close();
});
`;

const STOP_TIMEOUT_MS = 5_000;

export function startBackgroundCheckpoints(
  file: string,
  options: BackgroundCheckpointOptions,
): BackgroundCheckpoints {
  const driver = createRequire(import.meta.url).resolve('better-sqlite3');
  const worker = new Worker(WORKER_SOURCE, {
    eval: true,
    workerData: { driver, file, intervalMs: options.intervalMs, synchronous: options.synchronous },
  });
  // Never what keeps a process alive: a store left open must not hang its process's exit.
  worker.unref();
  let stopping: Promise<void> | null = null;
  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  worker.once('error', (error) => {
    if (stopping === null) options.onStopped?.(error);
  });
  return {
    request() {
      if (stopping === null) worker.postMessage('checkpoint');
    },
    stop() {
      stopping ??= (async () => {
        worker.postMessage('stop');
        const timer = setTimeout(() => void worker.terminate(), STOP_TIMEOUT_MS);
        await exited;
        clearTimeout(timer);
      })();
      return stopping;
    },
  };
}
