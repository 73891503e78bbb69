/**
 * Graceful shutdown for a served process: on SIGTERM (or SIGINT) stop accepting connections, let the
 * requests in flight finish, then run `afterClose` (stop the sweeper, close the store) and exit 0.
 * A second signal, or `graceMs` elapsing, exits at once with code 1.
 */
import type { FastifyInstance } from 'fastify';

export interface ShutdownOptions {
  /** Runs after the server has closed: stop background work, close the store. */
  readonly afterClose: () => Promise<void>;
  /** Default ['SIGTERM', 'SIGINT']. */
  readonly signals?: readonly NodeJS.Signals[];
  /** Longest wait for requests in flight. Default 30 000 ms. */
  readonly graceMs?: number;
  /** Default process.exit. */
  readonly exit?: (code: number) => void;
}

/** Returns a function that starts the same shutdown (or joins the one under way) without a signal. */
export function installGracefulShutdown(app: FastifyInstance, options: ShutdownOptions): () => Promise<void> {
  const signals = options.signals ?? ['SIGTERM', 'SIGINT'];
  const exit = options.exit ?? ((code: number) => process.exit(code));
  let closing: Promise<void> | null = null;

  const shutdown = (signal: string, fromSignal: boolean): Promise<void> => {
    if (closing !== null) {
      // A second signal means "now"; a second programmatic request joins the shutdown under way.
      if (!fromSignal) return closing;
      app.log.warn({ signal }, 'second signal: exiting now');
      exit(1);
      return closing;
    }
    app.log.info({ signal }, 'shutting down: no new connections, finishing requests in flight');
    const timer = setTimeout(() => {
      app.log.error('requests still in flight after the grace period: exiting');
      exit(1);
    }, options.graceMs ?? 30_000);
    timer.unref();
    closing = (async () => {
      let code = 0;
      try {
        await app.close();
        await options.afterClose();
        app.log.info('stopped');
      } catch (error) {
        app.log.error({ err: error }, 'shutdown failed');
        code = 1;
      }
      clearTimeout(timer);
      exit(code);
    })();
    return closing;
  };

  for (const signal of signals) process.on(signal, () => void shutdown(signal, true));
  return () => shutdown('manual', false);
}
