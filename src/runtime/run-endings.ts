/** How a run that does not complete ends: cancelled at a safe point, or failed. */
import { isAgentStateError } from '../core/errors.js';
import type { RunContext, RunHeader } from './run-context.js';
import type { RunEventLog } from './run-events.js';

/**
 * Ends a run stopped at a safe point: its input is kept as the user's message (marked `cancelled`), so the
 * session's next turn is a new run, and its last event is `run.cancelled`, in the same commit. What its
 * earlier commits wrote stays (every action it began has its outcome).
 */
export async function endCancelled(rt: RunContext, header: RunHeader): Promise<void> {
  rt.cancel = null;
  rt.beforeFinal = null;
  rt.finalEvent = () => ({
    type: 'run.cancelled',
    data: { run_id: header.run_id, session_id: header.session_id },
  });
  await rt.commit(
    'turn',
    {
      messages: {
        session_id: header.session_id,
        items: [
          { role: 'user', content: header.input, metadata: { run_id: header.run_id, cancelled: true } },
        ],
      },
    },
    null,
    { output: { cancelled: true } },
  );
}

/** Tells the run's followers it failed (its error as an answer would carry it); never throws. */
export async function failed(log: RunEventLog, error: unknown): Promise<void> {
  const code = isAgentStateError(error) ? error.code : 'internal';
  const message = error instanceof Error ? error.message : String(error);
  log.add('run.failed', { error: { code, message } });
  await log.flush().catch(() => undefined);
}
