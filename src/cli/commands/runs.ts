/**
 * Everything `inspect` shows of a session, read to the end (a long session is never cut short): its
 * messages, its tasks, each task's actions, and the checkpoints of every run its messages name plus the run
 * in flight.
 */
import type { Action, Checkpoint, Message, Session, Task } from '../../core/model.js';
import { runIdFor } from '../../runtime/index.js';
import type { Page, ReadScope, StateStore } from '../../store/types.js';

const PAGE = 500;

/** Every item of a cursor-paged list. */
async function allPages<T>(read: (cursor: string | null) => Promise<Page<T>>): Promise<T[]> {
  const items: T[] = [];
  for (let cursor: string | null = null; ; ) {
    const page: Page<T> = await read(cursor);
    items.push(...page.items);
    if (page.next_cursor === null) return items;
    cursor = page.next_cursor;
  }
}

/** Every message of the session, in seq order. */
export async function messagesOfSession(store: StateStore, scope: ReadScope, id: string): Promise<Message[]> {
  const messages: Message[] = [];
  for (;;) {
    const after_seq = messages.at(-1)?.seq ?? 0;
    const page = await store.listMessages(scope, id, { after_seq, limit: 1000 });
    messages.push(...page);
    if (page.length < 1000) return messages;
  }
}

export function tasksOfSession(store: StateStore, scope: ReadScope, id: string): Promise<Task[]> {
  return allPages((cursor) => store.listTasks(scope, { session_id: id, limit: PAGE, cursor }));
}

export function actionsOfTask(store: StateStore, scope: ReadScope, id: string): Promise<Action[]> {
  return allPages((cursor) => store.listActions(scope, { task_id: id, limit: PAGE, cursor }));
}

/**
 * The checkpoints of the session's runs: the run in flight (named by the last message's seq) and every run
 * a message names, each run's newest first.
 */
export async function checkpointsOfSession(
  store: StateStore,
  scope: ReadScope,
  session: Session,
  messages: readonly Message[],
): Promise<Checkpoint[]> {
  const runs = new Set<string>([runIdFor(session.id, messages.at(-1)?.seq ?? 0)]);
  for (const message of [...messages].reverse()) {
    const id = message.metadata.run_id;
    if (typeof id === 'string') runs.add(id);
  }
  const checkpoints: Checkpoint[] = [];
  for (const run of runs) {
    for (let before: string | null = null; ; ) {
      const page = await store.listCheckpoints(scope, run, { limit: PAGE, before });
      checkpoints.push(...page.items);
      if (page.next_cursor === null) break;
      before = page.next_cursor;
    }
  }
  return checkpoints;
}
