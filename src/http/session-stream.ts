/**
 * A session's live events: its runs' events as Server-Sent Events, one run after another, for as long as the
 * client stays. The stream starts at the run the session's next turn will be (`getSessionHead`'s
 * `next_run`: a run in flight is that run, so it is sent from its start) and follows it with `followRun`
 * (run-stream.ts) to its final event; then it moves on to the run that is next now. A run that ends without
 * committing (failed, cancelled) keeps its id, so the stream stays on it and sends its next attempt too.
 *
 * Event ids are per run, so a frame's `id:` here is `<run_id>:<event id>` (a cursor), and `Last-Event-ID` (or
 * `?after=`) takes one back to resume after that event. While the followed run has nothing new, the session's
 * head is read every `headPollMs`: when its next run has moved on (messages appended outside a run, or a
 * cursor of a finished run), the stream moves to it.
 */
import { PassThrough, Writable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ReadScope, StateStore } from '../store/types.js';
import { followRun } from './run-stream.js';

export const DEFAULT_HEAD_POLL_MS = 2000;

/** `<run_id>:<event id>`, as the run stream names runs and events. */
export const SESSION_CURSOR = /^(run_[a-z0-9]{1,64}):([1-9]\d{0,9})$/;

export interface SessionPosition {
  readonly runId: string;
  /** The last event of the run the client has; null: from the run's first. */
  readonly after: string | null;
}

/** The position a cursor names, or null when the text is not a cursor. */
export function parseSessionCursor(text: string | undefined): SessionPosition | null {
  const match = text === undefined ? null : SESSION_CURSOR.exec(text.trim());
  return match === null ? null : { runId: match[1] as string, after: match[2] as string };
}

export interface SessionFollowOptions {
  readonly store: StateStore;
  readonly scope: ReadScope;
  readonly sessionId: string;
  /** Where the client stands (its `Last-Event-ID`); null: from the session's next run. */
  readonly start: SessionPosition | null;
  /** Ends the stream (the client left, or the server is closing). */
  readonly signal: AbortSignal;
  readonly pollMs?: number;
  readonly heartbeatMs?: number;
  readonly headPollMs?: number;
}

/**
 * What followRun writes to, for one run: each frame is passed on with its `id:` made a session cursor
 * (followRun writes a frame per write, `id:` first, as sseFrame makes it), and the last event seen is kept.
 */
class RunFrames extends Writable {
  last: string | null = null;
  count = 0;

  constructor(
    private readonly out: Writable,
    private readonly runId: string,
    private readonly signal: AbortSignal,
  ) {
    super({ decodeStrings: false });
  }

  override _write(
    chunk: string | Buffer,
    _encoding: BufferEncoding,
    done: (error?: Error | null) => void,
  ): void {
    let text = typeof chunk === 'string' ? chunk : chunk.toString('utf8');
    const id = /^id: ([^\n]*)\n/.exec(text);
    if (id !== null) {
      this.last = id[1] as string;
      this.count++;
      text = `id: ${this.runId}:${id[1]}\n${text.slice(id[0].length)}`;
    }
    if (this.out.write(text) || this.signal.aborted) {
      done();
      return;
    }
    const drained = () => {
      this.out.off('drain', drained);
      this.signal.removeEventListener('abort', drained);
      done();
    };
    this.out.on('drain', drained);
    this.signal.addEventListener('abort', drained, { once: true });
  }
}

/** Resolves after `ms`, or at once when `signal` aborts. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    timer.unref();
    signal.addEventListener('abort', done, { once: true });
  });
}

/** The session's next run, or null when the session is gone (deleted, expired, not in scope). */
async function nextRunOf(options: SessionFollowOptions): Promise<string | null> {
  const head = await options.store.getSessionHead(options.scope, options.sessionId, { next_run: true });
  if (head === null) return null;
  if (head.next_run === undefined) throw new Error('the store answered a session head without next_run');
  return head.next_run.id;
}

async function hasEventsAfter(options: SessionFollowOptions, position: SessionPosition): Promise<boolean> {
  const { store, scope, sessionId } = options;
  return (
    (await store.listRunEvents(scope, sessionId, position.runId, { after: position.after, limit: 1 }))
      .length > 0
  );
}

/**
 * Where to go from `position`: the same run while it has events the client lacks or is still the session's
 * next one; otherwise the session's next run from its start. Null when the session is gone.
 */
async function settle(
  options: SessionFollowOptions,
  position: SessionPosition | null,
): Promise<SessionPosition | null> {
  const next = await nextRunOf(options);
  if (next === null) return null;
  if (position !== null && (next === position.runId || (await hasEventsAfter(options, position))))
    return position;
  return { runId: next, after: null };
}

/** Writes the session's runs' events to `out` until the client leaves or the session is gone. */
export async function followSession(options: SessionFollowOptions, out: Writable): Promise<void> {
  const { signal } = options;
  const headPollMs = options.headPollMs ?? DEFAULT_HEAD_POLL_MS;
  let position = options.start;
  while (!signal.aborted) {
    position = await settle(options, position);
    if (position === null || signal.aborted) return;
    const run = position;
    const frames = new RunFrames(out, run.runId, signal);
    const following = new AbortController();
    const stop = () => following.abort();
    signal.addEventListener('abort', stop, { once: true });
    // While the run brings nothing, look whether the session has moved on to another run.
    const watching = (async () => {
      while (!following.signal.aborted) {
        await pause(headPollMs, following.signal);
        if (following.signal.aborted || frames.count > 0) return;
        const moved = await settle(options, run);
        if (moved === null || moved.runId !== run.runId) following.abort();
      }
    })();
    try {
      await followRun(
        {
          store: options.store,
          scope: options.scope,
          sessionId: options.sessionId,
          runId: run.runId,
          after: run.after,
          signal: following.signal,
          ...(options.pollMs === undefined ? {} : { pollMs: options.pollMs }),
          ...(options.heartbeatMs === undefined ? {} : { heartbeatMs: options.heartbeatMs }),
        },
        frames,
      );
    } finally {
      following.abort();
      signal.removeEventListener('abort', stop);
      await watching.catch(() => undefined);
    }
    position = { runId: run.runId, after: frames.last ?? run.after };
    // A run that ended: the next one may have begun already, its events wait in the store.
  }
}

/**
 * Answers the request with the session's events as Server-Sent Events (followSession), until the client
 * leaves or `closing` aborts (the server shuts down: the client resumes elsewhere with its Last-Event-ID).
 */
export function sendSessionEvents(
  request: FastifyRequest,
  reply: FastifyReply,
  follow: Omit<SessionFollowOptions, 'signal'>,
  closing: AbortSignal,
): FastifyReply {
  const out = new PassThrough();
  const leaving = new AbortController();
  const leave = () => leaving.abort();
  reply.raw.on('close', leave);
  closing.addEventListener('abort', leave, { once: true });
  if (closing.aborted) leaving.abort();
  // A comment first: the answer's head goes out now, not with a session's first event (maybe much later).
  out.write(': following the session\n\n');
  void followSession({ ...follow, signal: leaving.signal }, out)
    .catch((error: unknown) => request.log.warn({ err: error }, 'a session event stream failed'))
    .finally(() => {
      closing.removeEventListener('abort', leave);
      out.end();
    });
  return reply
    .header('content-type', 'text/event-stream; charset=utf-8')
    .header('cache-control', 'no-cache')
    .header('x-accel-buffering', 'no')
    .send(out);
}
