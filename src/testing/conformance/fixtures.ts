/** Small builders the concern files share. Everything goes through the public StateStore API. */
import { randomUUID } from 'node:crypto';
import type { Action, Session, Task } from '../../core/model.js';
import type { Page, PageQuery, Scope, StateStore } from '../../store/types.js';

export function session(store: StateStore, scope: Scope, ttl_seconds = 600): Promise<Session> {
  return store.createSession(scope, { agent: 'test', ttl_seconds, context: { lang: 'en' } });
}

export function task(store: StateStore, scope: Scope, session_id: string | null = null): Promise<Task> {
  return store.createTask(scope, { type: 'flight', session_id, slots: { from: 'ZRH' }, status_line: 'new' });
}

export function uniqueKey(label = 'key'): string {
  return `${label}-${randomUUID()}`;
}

export async function action(
  store: StateStore,
  scope: Scope,
  task_id: string,
  key = uniqueKey(),
): Promise<Action> {
  const { action: begun } = await store.beginAction(scope, {
    task_id,
    type: 'tool_call',
    tool: 'book',
    params: { seat: '12A' },
    idempotency_key: key,
  });
  return begun;
}

/** Follows next_cursor to the end; fails the test on a loop. */
export async function collect<T>(
  fetch: (query: PageQuery) => Promise<Page<T>>,
  limit: number,
): Promise<{ items: T[]; pages: number }> {
  const items: T[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const page: Page<T> = await fetch({ limit, cursor });
    items.push(...page.items);
    cursor = page.next_cursor;
    pages++;
    if (pages > 1000) throw new Error('pagination does not end');
  } while (cursor !== null);
  return { items, pages };
}

export function ids(records: readonly { id: string }[]): string[] {
  return records.map((r) => r.id);
}
