/**
 * A turn's final commit, as every turn program writes it: the turn's two messages, the session moved to
 * the status the turn leaves it in, and the checkpoint with the run's output (label `turn`: the run's final
 * event goes with it). A session changed while the run was away (a PATCH between a crash and its resume)
 * is read again, once, instead of failing every resume for ever.
 */
import { isAgentStateError } from '../core/errors.js';
import type { JsonObject, JsonValue } from '../core/json.js';
import type { Session } from '../core/model.js';
import type { CommitBatch, CommitResult, RunContext } from './run-context.js';

/** The user's input and the reply, as the session's next two messages. */
export function turnMessages(
  rt: RunContext,
  reply: string,
  taskIds: readonly string[],
): CommitBatch['messages'] {
  const { input, session_id: sessionId, request_key: key } = rt.header;
  const requestKey: JsonObject = typeof key === 'string' ? { request_key: key } : {};
  return {
    session_id: sessionId,
    items: [
      { role: 'user', content: input, metadata: { run_id: rt.runId, ...requestKey } },
      {
        role: 'assistant',
        content: reply,
        metadata: { run_id: rt.runId, task_ids: [...taskIds], ...requestKey },
      },
    ],
  };
}

/** The session patch a turn's final commit carries: none when the session is already as the turn leaves it. */
export function sessionMove(
  session: Pick<Session, 'id' | 'version' | 'status' | 'agent'>,
  status: 'active' | 'waiting_for_user',
  agent: string,
): Pick<CommitBatch, 'session'> {
  if (session.status === status && session.agent !== null) return {};
  // The session remembers the agent it was first run with.
  return {
    session: {
      id: session.id,
      expected_version: session.version,
      patch: { status, agent: session.agent ?? agent },
    },
  };
}

/** Writes the final commit built from the session as read; on a session conflict, from it read again. */
export async function commitFinal(
  rt: RunContext,
  session: Session,
  targetId: string | null,
  /** The checkpoint's channels besides the run's: `{ output }`, what the run answers. */
  extra: JsonObject,
  build: (session: Session) => CommitBatch,
): Promise<CommitResult> {
  try {
    return (await rt.commit('turn', build(session), targetId, extra)).result;
  } catch (error) {
    if (!isAgentStateError(error, 'version_conflict') || error.details?.kind !== 'session') throw error;
    const fresh = (await rt.read('session.reload', async () =>
      asJson(await rt.store.getSession(rt.scope, session.id)),
    )) as unknown as Session | null;
    if (fresh === null) throw error;
    return (await rt.commit('turn', build(fresh), targetId, extra)).result;
  }
}

function asJson<T>(value: T): JsonValue {
  return value as unknown as JsonValue;
}
