/**
 * The tables of the memory driver and the undo log that makes every transaction atomic.
 *
 * Stored records are never mutated in place: a write puts a new object, and the transaction remembers the
 * previous one. A failing transaction rolls back every write it made, in reverse. Transactions run one at
 * a time, so no other call ever sees a half-done state.
 */
import type { JsonObject } from '../../core/json.js';
import type { Action, Checkpoint, MemoryItem, Message, Session, Task, TaskEvent } from '../../core/model.js';
import type { LeaseRow, RequestKeyRow, RunEventRow } from '../core/driver.js';
import { newCursorKey } from '../shared/sealed-cursor.js';

/**
 * A checkpoint as kept: its channels and metadata as the store's own copies (every other field is text or
 * a number), never handed out and never changed: a read copies them. A checkpoint's copy takes every part
 * equal to its run's newest checkpoint from that one (`cloneJsonSharing`), so a run that grows by appends
 * keeps each message once, as the other stores' blobs do. A copy of plain JSON costs less than its JSON
 * text both ways: 16 µs against 42 µs to stringify, and 42 µs to parse, for a 24 KB state. Earlier forms:
 * whole copies, JSON text, and before that UTF-8 bytes in a Buffer.
 */
export interface StoredCheckpoint {
  readonly rec: Omit<Checkpoint, 'channels' | 'metadata'>;
  readonly channels: JsonObject;
  readonly metadata: JsonObject;
}

/** A stored record with its insertion order, used for newest-first listing and stable cursors. */
export interface Row<T> {
  readonly seq: number;
  readonly rec: T;
}

/** Rows grouped by an owner key (a user, or a user's namespace), each group by the row's own key. */
export type Grouped<T> = Map<string, Map<string, T>>;

export interface Tables {
  readonly sessions: Map<string, Row<Session>>;
  /** The same rows by tenant and user: a user's list reads the user's only. */
  readonly sessionsByUser: Grouped<Row<Session>>;
  /** Messages by session id, in seq order (appended in place: every read copies what it returns). */
  readonly messages: Map<string, Message[]>;
  readonly tasks: Map<string, Row<Task>>;
  /** The same rows by tenant and user (a task never changes owner): a user's list reads the user's only. */
  readonly tasksByUser: Grouped<Row<Task>>;
  /** A user's open tasks (OPEN_TASK_STATES) only: what every turn lists. */
  readonly openTasksByUser: Grouped<Row<Task>>;
  /** Events by task id, oldest first. */
  readonly events: Map<string, TaskEvent[]>;
  readonly actions: Map<string, Row<Action>>;
  /** The same rows by tenant and user. */
  readonly actionsByUser: Grouped<Row<Action>>;
  /** Action id by tenant, user and idempotency key. */
  readonly actionKeys: Map<string, string>;
  /** Checkpoints by id. */
  readonly checkpoints: Map<string, Row<StoredCheckpoint>>;
  /** Checkpoint rows by tenant, user and run, in write order; rows removed from `checkpoints` are skipped. */
  readonly runs: Map<string, Row<StoredCheckpoint>[]>;
  /** Memory items by tenant, user and namespace, then by key: a list reads its namespace only. */
  readonly memory: Grouped<MemoryItem>;
  readonly leases: Map<string, LeaseRow>;
  readonly requestKeys: Map<string, RequestKeyRow>;
  /** Run events by tenant, session and run id, in seq order (appended in place). */
  readonly runEvents: Map<string, RunEventRow[]>;
  /** Seals the lists' cursors (shared/sealed-cursor.ts): random per store, like the store itself. */
  readonly cursorKey: Buffer;
}

export function createTables(): Tables {
  return {
    sessions: new Map(),
    sessionsByUser: new Map(),
    messages: new Map(),
    tasks: new Map(),
    tasksByUser: new Map(),
    openTasksByUser: new Map(),
    events: new Map(),
    actions: new Map(),
    actionsByUser: new Map(),
    actionKeys: new Map(),
    checkpoints: new Map(),
    runs: new Map(),
    memory: new Map(),
    leases: new Map(),
    requestKeys: new Map(),
    runEvents: new Map(),
    cursorKey: newCursorKey(),
  };
}

/** A composite map key; NUL cannot appear in a meaningful id, so parts never run together. */
export function key(...parts: string[]): string {
  return parts.join('\u0000');
}

export class Tx {
  private readonly undo: (() => void)[] = [];

  set<K, V>(map: Map<K, V>, k: K, value: V): void {
    const had = map.has(k);
    const old = map.get(k);
    this.undo.push(() => {
      if (had) map.set(k, old as V);
      else map.delete(k);
    });
    map.set(k, value);
  }

  delete<K, V>(map: Map<K, V>, k: K): boolean {
    if (!map.has(k)) return false;
    const old = map.get(k) as V;
    this.undo.push(() => map.set(k, old));
    map.delete(k);
    return true;
  }

  /** Appends `items` to the list at `k` (made when missing), in place; undone by cutting it back. */
  append<K, V>(map: Map<K, V[]>, k: K, items: readonly V[]): void {
    const list = map.get(k);
    if (list === undefined) {
      this.set(map, k, [...items]);
      return;
    }
    const length = list.length;
    this.undo.push(() => {
      list.length = length;
    });
    list.push(...items);
  }

  /** Sets `k` in the group `owner` of `index` (the group made when missing). */
  setIn<V>(index: Grouped<V>, owner: string, k: string, value: V): void {
    let group = index.get(owner);
    if (group === undefined) {
      group = new Map();
      this.set(index, owner, group);
    }
    this.set(group, k, value);
  }

  /** Deletes `k` from the group `owner` of `index`, and the group once empty. */
  deleteIn<V>(index: Grouped<V>, owner: string, k: string): boolean {
    const group = index.get(owner);
    if (group === undefined || !this.delete(group, k)) return false;
    // Undone in reverse: the group comes back first, then its row.
    if (group.size === 0) this.delete(index, owner);
    return true;
  }

  rollback(): void {
    for (let i = this.undo.length - 1; i >= 0; i--) this.undo[i]?.();
    this.undo.length = 0;
  }
}
