/**
 * Run events: the ordered log of what a run did, for clients that stream a run or come back to it. A run's
 * events are numbered by the store in the order they are written; those of a turn's commit are written in
 * that commit (see TurnBatch.events), so no event tells of a change that did not land and no change lands
 * without its event. The log of a run is kept for the store's `runEventTtlSeconds` (default one hour)
 * after the run's last event, then swept with the rest of what expired.
 */
import type { JsonObject } from '../../core/json.js';
import type { RunEvent, RunEventType } from '../../core/model.js';
import type { ReadScope, Scope } from './common.js';

export interface NewRunEvent {
  readonly type: RunEventType;
  /** Plain JSON; default {}. */
  readonly data?: JsonObject;
}

export interface RunEventAppend {
  /** A session of the scope's user that is not expired. */
  readonly session_id: string;
  readonly run_id: string;
  /** 1..1000 events, written in this order after the run's last. */
  readonly events: readonly NewRunEvent[];
}

export interface RunEventQuery {
  /** An event's id: only the events written after it. Default: from the run's first. */
  readonly after?: string | null;
  /** 1..1000; default 100. */
  readonly limit?: number;
}

export const DEFAULT_RUN_EVENT_TTL_SECONDS = 3600;

export interface RunEventCalls {
  /** Appends events to the run's log (a model's streamed text, a run that starts or fails). */
  appendRunEvents(scope: Scope, append: RunEventAppend): Promise<void>;
  /**
   * The run's events after `after`, oldest first. Empty when the session is not in scope or expired, or
   * the run has none (yet, or any more).
   */
  listRunEvents(
    scope: ReadScope,
    session_id: string,
    run_id: string,
    query?: RunEventQuery,
  ): Promise<RunEvent[]>;
}
