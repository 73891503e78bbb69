/** What the SQL driver's rows of one transaction (or read) share. */

import type { Action, MemoryItem, Session, Task } from '../../core/model.js';

/** A row an optimistic attempt wrote: read back from here (the database has not got it yet). */
export type KeptRow =
  | { readonly kind: 'task'; readonly row: Task; readonly previous: Task | null }
  | { readonly kind: 'memory'; readonly row: MemoryItem };

import type { BlobCache } from '../shared/blob-cache.js';
import type { ReadScope } from '../types.js';
import type { LastCheckpoints } from './context.js';
import type { DeferredWrites, SqlDialect, SqlExecutor } from './executor.js';
import type { KnownRows, Touched } from './known-rows.js';

/** What an optimistic attempt read from the rows the store knows, and what it leaves them (known-rows.ts). */
export interface KnownUse {
  readonly rows: KnownRows;
  /** Rows it took from `rows` or wrote: forgotten when it misses. */
  readonly touched: Touched;
  /** Tasks it read from the database (learned when it lands). */
  readonly tasksRead: Map<string, Task>;
  /** Actions as its writes leave them. */
  readonly actions: Map<string, Action>;
  /** Memory items by itemKey as it found or left them (null: absent). */
  readonly memory: Map<string, MemoryItem | null>;
}

export interface SqlTxEnv {
  readonly q: SqlExecutor;
  readonly dialect: SqlDialect;
  /**
   * Appended to a session's read in a write transaction: PostgreSQL's ' FOR UPDATE' (writers of one
   * session take turns, so the message count and version read stay true until the commit, and a session a
   * new record names cannot be deleted before it); '' for reads and for SQLite, whose writers are serial.
   */
  readonly sessionLock: string;
  /**
   * An optimistic write's kept statements (PostgreSQL): a session read is held (checked unchanged, and
   * locked, with the writes) instead of locked when read, and a session written twice is written once.
   */
  readonly deferred: DeferredWrites | null;
  /** With `deferred`: each written session as first read, and the messages its kept update adds. */
  readonly pendingSessions: Map<string, { readonly previous: Session; added: number }>;
  /** With `deferred`: the task and memory rows the attempt wrote (`task:<id>`, `memory:<ns>\0<key>`). */
  readonly kept: Map<string, KeptRow>;
  /** Sessions this write transaction read or wrote, by id (null for reads): read once per transaction. */
  readonly seen: Map<string, Session> | null;
  /** Each session's message count as read, and the messages this transaction appended to it. */
  readonly counts: Map<string, { stored: number; added: number }>;
  /**
   * Where sessions are read when they are not in this database (the tiered store's durable tier: they live
   * in Redis). This driver then stores no session and no message.
   */
  readonly sessions: ((scope: ReadScope, id: string) => Promise<Session | null>) | undefined;
  /** The last checkpoint this store wrote in each run: the manifest a put encodes against. */
  readonly lastCheckpoints: LastCheckpoints;
  /** The checkpoint blobs this store wrote or read recently: a read fetches only the others. */
  readonly blobCache: BlobCache;
  /** With `deferred`: the rows the store knows, read instead of the database and held unchanged. */
  readonly known: KnownUse | null;
  /** With optimistic writes: the rows the store knows, told the memory items its reads find. */
  readonly knownRows: KnownRows | null;
}
