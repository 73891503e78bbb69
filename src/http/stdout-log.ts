/**
 * The JSON log stream of a served process: pino lines on stdout, written asynchronously.
 *
 * pino's own default stream flushes at exit with a loop that waits as long as stdout cannot take more,
 * so a server whose log reader has stalled (a supervisor that never reads the pipe) never exits: not on
 * SIGTERM, not on a second one. This stream keeps pino's behaviour while the process runs (a full pipe
 * holds lines in memory until the reader catches up) but bounds the flush at exit: lines stdout still
 * cannot take after `EXIT_FLUSH_MS` are dropped, and a closed pipe (EPIPE) stops logging instead of
 * failing the process.
 */
import { isMainThread } from 'node:worker_threads';
import pino, { type Logger } from 'pino';
import * as sonicBoom from 'sonic-boom';
import { AgentStateError } from '../core/errors.js';
import { activeTraceIds } from '../observability/tracing.js';

// sonic-boom is CommonJS: under ESM its class is the module's default export.
const SonicBoom = sonicBoom.default as unknown as typeof sonicBoom.SonicBoom;
type SonicBoom = sonicBoom.SonicBoom;

/** Longest time the exit flush waits for a stalled stdout before dropping what is left. */
export const EXIT_FLUSH_MS = 2_000;

let shared: SonicBoom | null = null;

/** One stream on fd 1 per thread, shared by every logger made here (one exit hook, not one per server). */
function stdoutStream(): SonicBoom {
  if (shared !== null) return shared;
  // Opening process.stdout hands fd 1 to libuv, which puts a pipe or a socket in non-blocking mode. Without
  // it (no turn threads, a cluster worker: nothing else opens it) a stalled reader makes every write block
  // the thread in the kernel, the exit flush too, where no deadline can stop it; with it, a write that
  // stdout cannot take fails with EAGAIN, retried later while the process runs and given up at exit.
  if (isMainThread) void process.stdout.writable;
  let deadline = Number.POSITIVE_INFINITY;
  const stream = new SonicBoom({ fd: 1, sync: false, retryEAGAIN: () => Date.now() < deadline });
  const silence = (): void => {
    stream.write = () => true;
    stream.flushSync = () => undefined;
  };
  // Only reached once the exit deadline has passed (EAGAIN) or when the reader is gone (EPIPE).
  stream.on('error', silence);
  if (isMainThread) {
    process.on('exit', () => {
      deadline = Date.now() + EXIT_FLUSH_MS;
      try {
        stream.flushSync();
      } catch {
        // stdout took nothing more before the deadline, or was closed: what is left is dropped.
      }
      silence();
    });
  }
  shared = stream;
  return stream;
}

const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** A pino logger writing JSON lines to stdout at `level` (AGENTSTATE_LOG_LEVEL for `serve`). */
export function createStdoutLogger(level: string): Logger {
  if (!(LEVELS as readonly string[]).includes(level)) {
    throw new AgentStateError(
      'invalid_request',
      `AGENTSTATE_LOG_LEVEL must be one of ${LEVELS.join(', ')}, got ${JSON.stringify(level)}`,
    );
  }
  // A line logged inside a traced span (a request, a turn) carries its trace_id and span_id.
  return pino({ level, mixin: () => activeTraceIds() ?? {} }, stdoutStream());
}
