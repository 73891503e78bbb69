/**
 * A run's events as Server-Sent Events: `id:` (the event's id, for `Last-Event-ID`), `event:` (its type)
 * and `data:` (the event as JSON), from after a given id to the run's final event. Events are read from
 * the store, so a follower on any instance that shares it sees the same stream; a run in this process
 * wakes its followers as it writes (runtime/run-notify.ts), others poll. Comments keep an idle connection
 * open. A follower holds at most one page of events, so many streams cost little memory.
 */
import { PassThrough, type Writable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { isFinalRunEvent, type RunEvent } from '../core/model.js';
import { isLocalRun, runEventsOrTimeout } from '../runtime/run-notify.js';
import type { ReadScope, StateStore } from '../store/types.js';

export const DEFAULT_POLL_MS = 250;
/** How often a follower of a run this process hears of reads the store anyway. */
export const LOCAL_POLL_MS = 2_000;
export const DEFAULT_HEARTBEAT_MS = 15_000;
const PAGE = 500;

export interface FollowOptions {
  readonly store: StateStore;
  readonly scope: ReadScope;
  readonly sessionId: string;
  readonly runId: string;
  /** The id of the last event the client has; null: from the run's first. */
  readonly after: string | null;
  /** Ends the stream (the client left). */
  readonly signal: AbortSignal;
  /**
   * Settles when the run's work in this process is over (its final event is then stored, unless storing it
   * failed): the stream ends after one more read instead of waiting for an event that will not come.
   */
  readonly settled?: Promise<unknown>;
  readonly pollMs?: number;
  readonly heartbeatMs?: number;
}

export function sseFrame(event: RunEvent): string {
  return `id: ${event.id}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
}

/** True when the request asks for an event stream. */
export function wantsEventStream(accept: string | undefined): boolean {
  return (accept ?? '').toLowerCase().includes('text/event-stream');
}

async function write(out: Writable, text: string, signal: AbortSignal): Promise<void> {
  if (out.write(text) || signal.aborted) return;
  await new Promise<void>((resolve) => {
    const done = () => {
      out.off('drain', done);
      signal.removeEventListener('abort', done);
      resolve();
    };
    out.on('drain', done);
    signal.addEventListener('abort', done, { once: true });
  });
}

/** Writes the run's events to `out` until its final event, the client's leaving, or the run's end here. */
export async function followRun(options: FollowOptions, out: Writable): Promise<void> {
  const { store, scope, sessionId, runId, signal } = options;
  const pollMs = options.pollMs ?? DEFAULT_POLL_MS;
  const heartbeatMs = options.heartbeatMs ?? DEFAULT_HEARTBEAT_MS;
  let after = options.after;
  let over = false;
  void options.settled?.then(
    () => {
      over = true;
    },
    () => {
      over = true;
    },
  );
  let quietSince = Date.now();
  while (!signal.aborted) {
    const lastRound = over;
    // Listening before the read: news that comes while it runs is not missed.
    // A run this process hears of (it runs here or on a turn thread) wakes the follower as it writes:
    // the store is then read only as a safeguard.
    const wait = isLocalRun(sessionId, runId) ? LOCAL_POLL_MS : pollMs;
    const news = runEventsOrTimeout(sessionId, runId, wait, signal);
    const events = await store.listRunEvents(scope, sessionId, runId, { after, limit: PAGE });
    for (const event of events) {
      await write(out, sseFrame(event), signal);
      after = event.id;
      if (isFinalRunEvent(event.type)) return;
    }
    if (events.length === PAGE) continue;
    if (lastRound) return;
    if (events.length > 0) quietSince = Date.now();
    else if (Date.now() - quietSince >= heartbeatMs) {
      await write(out, ': keep-alive\n\n', signal);
      quietSince = Date.now();
    }
    await news;
  }
}

/**
 * Answers the request with the run's events as Server-Sent Events (followRun). The client leaving ends
 * the stream, not the run.
 */
export function sendRunEvents(
  request: FastifyRequest,
  reply: FastifyReply,
  follow: Omit<FollowOptions, 'signal'>,
): FastifyReply {
  const out = new PassThrough();
  const leaving = new AbortController();
  reply.raw.on('close', () => leaving.abort());
  void followRun({ ...follow, signal: leaving.signal }, out)
    .catch((error: unknown) => request.log.warn({ err: error }, 'a run event stream failed'))
    .finally(() => out.end());
  return reply
    .header('content-type', 'text/event-stream; charset=utf-8')
    .header('cache-control', 'no-cache')
    .header('x-accel-buffering', 'no')
    .send(out);
}
