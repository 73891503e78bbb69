/**
 * Rows this store last read or wrote (PostgreSQL's optimistic writes, postgres/optimistic.ts): a session
 * with its message count, tasks, actions and memory items, and a user's whole list of open tasks. An
 * optimistic attempt reads such a row from here instead of the database, and holds it (a condition checked,
 * and locked, with the attempt's one statement) unchanged since: a row another writer changed fails the
 * hold, nothing is written, and the work runs again in a transaction that reads it (the row is forgotten).
 * So a turn's commits read nothing the turn's head read or its earlier commit already saw, and nothing a
 * caller sees depends on this: the rows only spare round trips while nobody else writes them.
 *
 * Per store, the least recently stored first out past a bound; copies in and out (nothing kept is shared).
 */
import { cloneJson, type JsonValue } from '../../core/json.js';
import type { Action, MemoryItem, Session, Task } from '../../core/model.js';
import { RecentMap } from '../../core/recent-map.js';
import type { ReadScope } from '../types.js';

/** Rows of each kind remembered at most. */
const KNOWN_ROWS = 10_000;
/** Users whose open tasks are remembered at most, and the longest list remembered (its tasks are copied). */
const KNOWN_LISTS = 1_000;
const KNOWN_LIST_LENGTH = 100;

/** A copy of a remembered row (records are plain JSON). */
const copyRow = <T>(row: T): T => cloneJson(row as unknown as JsonValue) as unknown as T;

class Recent<T> {
  private readonly rows: RecentMap<string, T>;

  constructor(bound = KNOWN_ROWS) {
    this.rows = new RecentMap(bound);
  }

  get(key: string): T | undefined {
    const row = this.rows.get(key);
    return row === undefined ? undefined : copyRow(row);
  }

  set(key: string, row: T): void {
    this.rows.set(key, copyRow(row));
  }

  delete(key: string): void {
    this.rows.delete(key);
  }
}

/** A session as stored: the record and its message count. */
export interface KnownSession {
  readonly session: Session;
  readonly messageCount: number;
}

export const userKey = (scope: { tenant_id: string; user_id?: string }) =>
  `${scope.tenant_id}\u0000${scope.user_id ?? ''}`;

export const itemKey = (scope: { tenant_id: string; user_id: string }, namespace: string, key: string) =>
  `${userKey(scope)}\u0000${namespace}\u0000${key}`;

export class KnownRows {
  readonly sessions = new Recent<KnownSession>();
  readonly tasks = new Recent<Task>();
  readonly actions = new Recent<Action>();
  /** Memory items by itemKey; null: known absent. */
  readonly memory = new Recent<MemoryItem | null>();
  /** A user's open tasks (every session's), newest first: the whole list, as a head read found it. */
  readonly openTasks = new Recent<Task[]>(KNOWN_LISTS);

  /**
   * What a session head read found: the session, the open tasks it listed (each as it is now: the turn
   * writes them next, and another process may have written them since this one did), and the user's list
   * of them when it listed them all (null: not).
   */
  head(scope: ReadScope, known: KnownSession, listed: readonly Task[], all: boolean): void {
    this.sessions.set(known.session.id, known);
    for (const task of listed) this.tasks.set(task.id, task);
    if (scope.user_id === undefined) return;
    if (all && listed.length <= KNOWN_LIST_LENGTH) this.openTasks.set(userKey(scope), [...listed]);
    else this.openTasks.delete(userKey(scope));
  }

  /** Forgets what an attempt that missed relied on or wrote. */
  forget(touched: Touched): void {
    for (const id of touched.sessions) this.sessions.delete(id);
    for (const id of touched.tasks) this.tasks.delete(id);
    for (const id of touched.actions) this.actions.delete(id);
    for (const key of touched.memory) this.memory.delete(key);
    for (const user of touched.users) this.openTasks.delete(user);
  }
}

/** The known rows one optimistic attempt used or wrote, by kind. */
export interface Touched {
  readonly sessions: Set<string>;
  readonly tasks: Set<string>;
  readonly actions: Set<string>;
  readonly memory: Set<string>;
  readonly users: Set<string>;
}

export function touched(): Touched {
  return { sessions: new Set(), tasks: new Set(), actions: new Set(), memory: new Set(), users: new Set() };
}
