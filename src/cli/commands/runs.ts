/** The checkpoints of a session: those of each of its runs (the runtime names a session's runs). */
import type { Checkpoint, Session } from '../../core/model.js';
import { listSessionRuns } from '../../runtime/index.js';
import type { ReadScope, StateStore } from '../../store/types.js';

export async function checkpointsOfSession(
  store: StateStore,
  scope: ReadScope,
  session: Session,
): Promise<Checkpoint[]> {
  const checkpoints: Checkpoint[] = [];
  for (const run of await listSessionRuns(store, scope, session.id, 20)) {
    checkpoints.push(...(await store.listCheckpoints(scope, run.run_id, { limit: 100 })).items);
  }
  return checkpoints;
}
