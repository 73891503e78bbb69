/** `getSessionHead`'s `next_run` for the stores that compose it from their own reads. */
import { invalidRequest } from '../../core/errors.js';
import type { Checkpoint } from '../../core/model.js';
import { type NextRun, runIdFor } from '../../core/run-id.js';

/** `options.next_run` checked: true, false or absent (false). `prefix` names the store in the message. */
export function checkNextRunOption(value: unknown, prefix = ''): boolean {
  if (value === undefined) return false;
  if (typeof value !== 'boolean')
    throw invalidRequest(
      `${prefix}options.next_run must be true or false, got ${JSON.stringify(value) ?? String(value)}`,
    );
  return value;
}

/** The session's next run and its newest checkpoint's label, by the store's own latestCheckpoint. */
export async function composeNextRun(
  sessionId: string,
  lastSeq: number,
  latestCheckpoint: (runId: string) => Promise<Checkpoint | null>,
): Promise<NextRun> {
  const id = runIdFor(sessionId, lastSeq);
  const newest = await latestCheckpoint(id);
  return { id, checkpoint_label: newest?.label ?? null };
}
