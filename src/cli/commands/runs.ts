/**
 * The checkpoints of a session. Runs are named by the runtime; until it says otherwise, a session's runs are
 * found through its checkpoints' `run_id`s recorded in the session context (`runs`) or the session id.
 */
import type { Checkpoint, Session } from '../../core/model.js';
import type { ReadScope, StateStore } from '../../store/types.js';

export async function checkpointsOfSession(
  store: StateStore,
  scope: ReadScope,
  session: Session,
): Promise<Checkpoint[]> {
  const page = await store.listCheckpoints(scope, session.id, { limit: 100 });
  return page.items;
}
