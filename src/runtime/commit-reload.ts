/** A resumed run's last commit before the crash: what it wrote, read back from the store. */
import type { JsonValue } from '../core/json.js';
import type { Action, Task } from '../core/model.js';
import type { Scope, StateStore } from '../store/types.js';
import type { CommitBatch, CommitResult } from './run-context.js';

/** The records `batch` wrote (those the store holds), as the commit that wrote them returned them. */
export async function reloadCommit(
  store: StateStore,
  scope: Scope,
  batch: CommitBatch | null,
  checkpointId: string,
): Promise<JsonValue> {
  const session = batch?.session === undefined ? null : await store.getSession(scope, batch.session.id);
  const tasks: Task[] = [];
  for (const id of [
    ...(batch?.create_tasks ?? []).map((t) => t.id ?? ''),
    ...(batch?.update_tasks ?? []).map((u) => u.id),
  ]) {
    const task = await store.getTask(scope, id);
    if (task !== null) tasks.push(task);
  }
  const actions: Action[] = [];
  for (const begun of batch?.begin_actions ?? []) {
    const action = await store.getActionByKey(scope, begun.idempotency_key);
    if (action !== null) actions.push(action);
  }
  for (const completed of batch?.complete_actions ?? []) {
    const action = await store.getAction(scope, completed.id);
    if (action !== null) actions.push(action);
  }
  const result: CommitResult = { session, tasks, actions, checkpoint_id: checkpointId };
  return result as unknown as JsonValue;
}
