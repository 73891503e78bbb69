/**
 * A chat stream's UI message chunks in the session's run event log, so that any instance can replay a
 * stream and follow it to its end. Chunks wait in memory and go out together as one `message.delta` event
 * (`data.ui_chunks`, and `data.text` with the text they carry for other readers of the log) once they are
 * `flushChars` long or `flushMs` old; adjacent text and reasoning deltas of one part are merged. A stream
 * costs a write per batch, not per token (as src/runtime/run-events.ts does for a turn's text).
 */
import type { UIMessageChunk } from 'ai';
import type { JsonObject, JsonValue } from '../../core/json.js';
import { isFinalRunEvent, type RunEvent } from '../../core/model.js';
import { announceRunEvents, runEventsOrTimeout } from '../../runtime/run-notify.js';
import type { NewRunEvent, ReadScope, Scope, StateStore } from '../../store/types.js';
import { plainJson } from './chat-records.js';
import { RepeatSkipper } from './chat-repeat.js';

export const CHUNKS_KEY = 'ui_chunks';

export interface ChunkBatching {
  /** A batch is written once this old (ms). Default 50. */
  readonly flushMs?: number;
  /** ... or once its chunks are this many characters of JSON. Default 100. */
  readonly flushChars?: number;
}

type DeltaChunk = Extract<UIMessageChunk, { type: 'text-delta' | 'reasoning-delta' }>;

function isDelta(chunk: UIMessageChunk): chunk is DeltaChunk {
  return chunk.type === 'text-delta' || chunk.type === 'reasoning-delta';
}

/** The writer of one stream's chunks (one run of the chat). Writes go out one after another, in order. */
export class ChunkLog {
  private pending: UIMessageChunk[] = [];
  private waiting = 0;
  private timer: NodeJS.Timeout | null = null;
  private chain: Promise<void> = Promise.resolve();
  private failure: { readonly error: unknown } | null = null;
  private readonly flushMs: number;
  private readonly flushChars: number;

  constructor(
    private readonly store: StateStore,
    private readonly scope: Scope,
    readonly sessionId: string,
    readonly runId: string,
    batching: ChunkBatching = {},
  ) {
    this.flushMs = batching.flushMs ?? 50;
    this.flushChars = batching.flushChars ?? 100;
  }

  /** A chunk of the stream: merged into the waiting batch, which goes out when long or old enough. */
  add(chunk: UIMessageChunk): void {
    const plain = plainJson(chunk);
    const last = this.pending.at(-1);
    if (
      last !== undefined &&
      isDelta(last) &&
      isDelta(plain) &&
      last.type === plain.type &&
      last.id === plain.id
    )
      this.pending[this.pending.length - 1] = { ...last, delta: last.delta + plain.delta };
    else this.pending.push(plain);
    this.waiting += isDelta(plain) ? plain.delta.length : JSON.stringify(plain).length;
    if (this.waiting >= this.flushChars) this.flushSoon();
    else if (this.timer === null) {
      this.timer = setTimeout(() => this.flushSoon(), this.flushMs);
      this.timer.unref();
    }
  }

  /** Writes the waiting chunks, then `events` (for example the run's final event), after every earlier write. */
  write(events: readonly NewRunEvent[] = []): Promise<void> {
    const batch = this.take();
    const all = batch === null ? [...events] : [batch, ...events];
    const next = this.chain.then(async () => {
      const failure = this.failure;
      if (failure !== null) {
        this.failure = null;
        throw failure.error;
      }
      if (all.length === 0) return;
      await this.store.appendRunEvents(this.scope, {
        session_id: this.sessionId,
        run_id: this.runId,
        events: all,
      });
      announceRunEvents(this.sessionId, this.runId);
    });
    this.chain = next.catch(() => undefined);
    return next;
  }

  private take(): NewRunEvent | null {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.waiting = 0;
    const chunks = this.pending;
    this.pending = [];
    return chunks.length === 0 ? null : chunkEvent(chunks);
  }

  private flushSoon(): void {
    this.write().catch((error: unknown) => {
      this.failure ??= { error };
    });
  }
}

/** One `message.delta` event carrying `chunks`. */
export function chunkEvent(chunks: readonly UIMessageChunk[]): NewRunEvent {
  const text = chunks
    .filter((chunk) => chunk.type === 'text-delta')
    .map((chunk) => chunk.delta)
    .join('');
  return { type: 'message.delta', data: { text, [CHUNKS_KEY]: chunks as unknown as JsonValue } };
}

/** The UI chunks an event carries (none for the run's other events). */
export function chunksOf(event: RunEvent): UIMessageChunk[] {
  if (event.type !== 'message.delta') return [];
  const chunks = (event.data as JsonObject)[CHUNKS_KEY];
  return Array.isArray(chunks) ? (chunks as unknown as UIMessageChunk[]) : [];
}

/** Every event of the run, oldest first. */
export async function allRunEvents(
  store: StateStore,
  scope: ReadScope,
  sessionId: string,
  runId: string,
): Promise<RunEvent[]> {
  const out: RunEvent[] = [];
  let after: string | null = null;
  for (;;) {
    const page: RunEvent[] = await store.listRunEvents(scope, sessionId, runId, { after, limit: 1000 });
    out.push(...page);
    if (page.length < 1000) return out;
    after = page.at(-1)?.id ?? null;
  }
}

export interface FollowChunksOptions {
  readonly store: StateStore;
  readonly scope: ReadScope;
  readonly sessionId: string;
  readonly runId: string;
  readonly signal: AbortSignal;
  /** How often the store is read while nothing comes (ms); a writer in this process wakes it sooner. */
  readonly pollMs: number;
  /** How long the run may be silent before `onQuiet` is asked (ms). */
  readonly quietMs: number;
  /** Called with the run followed after `quietMs` without events (for example: is the writer still alive?). */
  readonly onQuiet: (runId: string) => Promise<void>;
}

/** The run that goes on with a stream ended by `event` (a resumed durable turn), if any. */
function continuationOf(event: RunEvent): string | null {
  const next = (event.data as JsonObject).continued_by;
  return typeof next === 'string' ? next : null;
}

/**
 * The run's chunks from its first, then each new one as it is stored, until the run's final event. A run
 * that another continues (`continued_by` in its final event) is followed into that one, without what the
 * continuation repeats (RepeatSkipper).
 */
export async function* followChunks(options: FollowChunksOptions): AsyncGenerator<UIMessageChunk> {
  const { store, scope, sessionId, signal } = options;
  let runId = options.runId;
  let after: string | null = null;
  let quietSince = Date.now();
  const sent: UIMessageChunk[] = [];
  let skipper: RepeatSkipper | null = null;
  follow: while (!signal.aborted) {
    const news = runEventsOrTimeout(sessionId, runId, options.pollMs, signal);
    const events: RunEvent[] = await store.listRunEvents(scope, sessionId, runId, { after, limit: 500 });
    for (const event of events) {
      for (const chunk of chunksOf(event)) {
        const rest = skipper === null ? chunk : skipper.take(chunk);
        if (rest === 'diverged') {
          yield {
            type: 'abort',
            reason: 'the answer was resumed after a crash and differs from what was sent',
          };
          return;
        }
        if (rest === null) continue;
        sent.push(rest);
        yield rest;
      }
      after = event.id;
      if (isFinalRunEvent(event.type)) {
        const next = continuationOf(event);
        if (next === null) return;
        runId = next;
        after = null;
        skipper = new RepeatSkipper(sent);
        quietSince = Date.now();
        continue follow;
      }
    }
    if (events.length > 0) {
      quietSince = Date.now();
      continue;
    }
    if (Date.now() - quietSince >= options.quietMs) {
      await options.onQuiet(runId);
      quietSince = Date.now();
      continue;
    }
    await news;
  }
}

/** `followChunks` as a stream; cancelling it stops the reads. */
export function chunkStream(options: Omit<FollowChunksOptions, 'signal'>): ReadableStream<UIMessageChunk> {
  const stop = new AbortController();
  const chunks = followChunks({ ...options, signal: stop.signal });
  return new ReadableStream<UIMessageChunk>({
    async pull(controller) {
      const next = await chunks.next();
      if (next.done === true) controller.close();
      else controller.enqueue(next.value);
    },
    async cancel() {
      stop.abort();
      await chunks.return(undefined);
    },
  });
}
