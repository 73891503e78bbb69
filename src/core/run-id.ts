/**
 * The id of a session's next run. A run's id is derived from the session id and the seq of the session's
 * last message: an interrupted run has not appended its messages yet, so every process derives the same id
 * and finds its checkpoints; once the run commits its messages, the next run gets a new id.
 */
import { createHash } from 'node:crypto';
import { newId } from './ids.js';

/** `run_` + 128 bits of sha256(session id, last seq): the same for every process until the turn commits. */
export function runIdFor(sessionId: string, lastSeq: number): string {
  const bytes = createHash('sha256').update(`${sessionId}\n${lastSeq}`).digest();
  return newId('run', () => bytes.subarray(0, 16));
}

/** The run a session's next turn is, and where it stands (SessionHeadOptions.next_run). */
export interface NextRun {
  /** runIdFor(session id, seq of the session's newest message, 0 for none). */
  readonly id: string;
  /** The label of the run's newest checkpoint; null when it has none (a run not begun). */
  readonly checkpoint_label: string | null;
}
