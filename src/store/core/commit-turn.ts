/**
 * The core's commitTurn call: the batch checked once, then written in one driver transaction. Two drivers
 * need more than that transaction:
 * - one that lists only after its commit (`listsAfterCommit`): the open tasks are read right after it;
 * - one whose transaction writes one user's rows only (capability `oneUserPerTransaction`: a Redis
 *   script runs in one cluster slot): `other_memory` goes in transactions of its own, its puts before the
 *   rest of the batch and its deletes after it, so an item put is there before the records it stands
 *   beside and an item deleted goes only once they are written.
 */
import type { Scope, TurnBatch, TurnResult } from '../types.js';
import type { Op, WriteOp } from './context.js';
import type { StoreDriver } from './driver.js';
import {
  type CheckedBatch,
  type CheckedOtherMemory,
  commitTurn,
  deleteOther,
  listOpenTasks,
  putOther,
} from './turn.js';

/** What the store core lends a turn: its checked write and read calls. */
export interface TurnStore {
  readonly driver: StoreDriver;
  write<C, T>(check: () => C, work: (op: WriteOp, checked: C) => Promise<T>): Promise<T>;
  read<T>(work: (op: Op) => Promise<T>): Promise<T>;
}

export async function commitTurnCall(
  store: TurnStore,
  scope: Scope,
  batch: TurnBatch,
  check: () => CheckedBatch,
): Promise<TurnResult> {
  if (store.driver.capabilities.oneUserPerTransaction !== true || batch.other_memory === undefined)
    return commitChecked(store, scope, check);
  const checked = check();
  const other = checked.otherMemory as CheckedOtherMemory;
  const apart = (work: (op: WriteOp) => Promise<void>) => store.write(() => other, work);
  if (other.put.length > 0) await apart((op) => putOther(op, other));
  const written = await commitChecked(store, scope, () => ({ ...checked, otherMemory: null }));
  if (other.delete.length > 0) await apart((op) => deleteOther(op, other));
  return written;
}

async function commitChecked(store: TurnStore, scope: Scope, check: () => CheckedBatch): Promise<TurnResult> {
  if (store.driver.listsAfterCommit !== true)
    return store.write(check, (op, checked) => commitTurn(op, scope, checked));
  const { written, checked } = await store.write(check, async (op, checked) => ({
    written: await commitTurn(op, scope, checked, false),
    checked,
  }));
  if (written.open_tasks !== undefined) return written;
  const open = await store.read((op) => listOpenTasks(op, scope, checked));
  return open === null ? written : { ...written, open_tasks: open };
}
