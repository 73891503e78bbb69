/**
 * A run's event log as the run writes it (store: appendRunEvents, TurnBatch.events). Events wait here until
 * the run's next commit carries them in its batch (so they land with the state they describe), except a
 * model's streamed text: `delta` merges pieces and sends them on their own once they are `flushChars`
 * long or `flushMs` old, so a stream costs a write per chunk, not per token. Every write of the run goes
 * through `serial`, one after another, so the store numbers the run's events in the order they happened.
 */
import type { JsonObject } from '../core/json.js';
import type { RunEvent } from '../core/model.js';
import type { NewRunEvent, ReadScope, Scope, StateStore } from '../store/types.js';
import { announceRunEvents } from './run-notify.js';

export interface RunEventLogOptions {
  /** A streamed delta is sent once this old (ms). Default 50. */
  readonly flushMs?: number;
  /** ... or once this many characters are waiting. Default 100. */
  readonly flushChars?: number;
}

export const DEFAULT_DELTA_FLUSH_MS = 50;
export const DEFAULT_DELTA_FLUSH_CHARS = 100;

export class RunEventLog {
  private pending: NewRunEvent[] = [];
  private waitingChars = 0;
  private timer: NodeJS.Timeout | null = null;
  private chain: Promise<unknown> = Promise.resolve();
  private readonly flushMs: number;
  private readonly flushChars: number;

  constructor(
    readonly store: StateStore,
    readonly scope: Scope,
    readonly sessionId: string,
    readonly runId: string,
    options: RunEventLogOptions = {},
  ) {
    this.flushMs = options.flushMs ?? DEFAULT_DELTA_FLUSH_MS;
    this.flushChars = options.flushChars ?? DEFAULT_DELTA_FLUSH_CHARS;
  }

  /**
   * Called (once) before the log writes events on their own: the run's deferred checkpoint goes first, so
   * no event is stored before the run's first checkpoint (run-context.ts `commit`).
   */
  beforeWrite: (() => void) | null = null;

  /** An event for the run's next write. */
  add(type: NewRunEvent['type'], data: JsonObject = {}): void {
    this.pending.push({ type, data });
  }

  /** A piece of the model's streamed text: merged with the waiting one, sent when long or old enough. */
  delta(text: string): void {
    if (text.length === 0) return;
    const last = this.pending[this.pending.length - 1];
    if (last?.type === 'message.delta' && typeof last.data?.text === 'string') {
      this.pending[this.pending.length - 1] = {
        type: 'message.delta',
        data: { text: last.data.text + text },
      };
    } else {
      this.pending.push({ type: 'message.delta', data: { text } });
    }
    this.waitingChars += text.length;
    // The first piece waits for the timer even when long: a model that answers in one piece (the rules
    // model) has its reply go out with the run's next commit, a write fewer; a stream's later pieces go
    // once they are long enough.
    if (this.waitingChars >= this.flushChars && this.timer !== null) {
      this.flushSoon();
    } else if (this.timer === null) {
      this.timer = setTimeout(() => this.flushSoon(), this.flushMs);
      this.timer.unref();
    }
  }

  /** Events taken for a write that did not happen: they wait for the next write, before any added since. */
  putBack(events: readonly NewRunEvent[]): void {
    this.pending = [...events, ...this.pending];
  }

  /** The waiting events, for a commit's batch; none wait after. */
  take(): NewRunEvent[] {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.waitingChars = 0;
    const taken = this.pending;
    this.pending = [];
    return taken;
  }

  /**
   * Runs `write` after every write the run sent before it; its result (or error) is the write's own. A
   * streamed text that failed to be stored fails the next write instead (the run then stops there, as a
   * failed commit stops it).
   */
  serial<T>(write: () => Promise<T>): Promise<T> {
    const next = this.chain.then(async () => {
      const failure = this.failure;
      if (failure !== null) {
        this.failure = null;
        throw failure.error;
      }
      const written = await write();
      announceRunEvents(this.sessionId, this.runId);
      return written;
    });
    this.chain = next.catch(() => undefined);
    return next;
  }

  /** A flush that failed with nobody waiting for it: thrown by the next write. */
  private failure: { readonly error: unknown } | null = null;

  /** Sends the waiting events on their own (a stream's text, an event of a run that commits no more). */
  flush(): Promise<void> {
    this.beforeWrite?.();
    const events = this.take();
    if (events.length === 0) return this.drain();
    return this.serial(() =>
      this.store.appendRunEvents(this.scope, { session_id: this.sessionId, run_id: this.runId, events }),
    );
  }

  /** Sends the waiting text in the background; an error is kept for the next write. */
  private flushSoon(): void {
    this.flush().catch((error: unknown) => {
      this.failure ??= { error };
    });
  }

  /** Waits for every write sent so far; throws the error of a streamed text that failed to be stored. */
  drain(): Promise<void> {
    return this.serial(async () => undefined);
  }
}

/** The run's newest stored event, or null when it has none (any more). */
export async function lastRunEvent(
  store: StateStore,
  scope: ReadScope,
  sessionId: string,
  runId: string,
): Promise<RunEvent | null> {
  let after: string | null = null;
  let last: RunEvent | null = null;
  for (;;) {
    const page: RunEvent[] = await store.listRunEvents(scope, sessionId, runId, { after, limit: 1000 });
    if (page.length === 0) return last;
    last = page[page.length - 1] ?? null;
    after = last?.id ?? null;
  }
}
