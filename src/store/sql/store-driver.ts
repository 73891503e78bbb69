/**
 * The SQL driver of the store core (SQLite and PostgreSQL): rows in the schema of schema.ts, one database
 * transaction per core transaction, reads on one snapshot, the cursor key kept in the database.
 */

import { OPEN_TASK_STATES, type Session } from '../../core/model.js';
import type { DriverFastPaths, DriverReads, DriverTx, HeadReads, StoreDriver } from '../core/driver.js';
import { BlobCache } from '../shared/blob-cache.js';
import { MissingBlobError } from '../shared/checkpoint-codec.js';
import { cursorKeyFromHex } from '../shared/sealed-cursor.js';
import type { ReadScope, SessionHead, StoreCapabilities } from '../types.js';
import { LastCheckpoints } from './context.js';
import { type DeferredWrites, OptimisticMiss, type SqlDriver, type SqlExecutor } from './executor.js';
import { KnownRows, touched, userKey } from './known-rows.js';
import { SqlMaintenance } from './maintenance.js';
import { checkpointRows } from './rows-checkpoints.js';
import { eventRows } from './rows-events.js';
import { itemRows } from './rows-items.js';
import { sessionRows } from './rows-sessions.js';
import { taskRows } from './rows-tasks.js';
import { selectSessionHead } from './session-head.js';
import type { KeptRow, SqlTxEnv } from './tx-env.js';

export interface SqlDriverOptions {
  /** False: every call takes the core's generic path (what the conformance suite also runs). Default true. */
  readonly fastPaths?: boolean;
  /**
   * The tiered store's durable tier: sessions live in Redis and are read there (the session a task,
   * action or checkpoint names); this database stores none.
   */
  readonly sessions?: (scope: ReadScope, id: string) => Promise<Session | null>;
  /** Checkpoint blob text kept in memory of what this store wrote and read, in characters (default 8 Mi). */
  readonly checkpointCacheChars?: number;
}

export class SqlStoreDriver extends SqlMaintenance implements StoreDriver {
  readonly capabilities: StoreCapabilities = { multiProcess: true, durable: true };
  private readonly lastCheckpoints = new LastCheckpoints();
  private readonly blobCache: BlobCache;
  private key: Promise<Buffer> | null = null;
  readonly fast: DriverFastPaths | undefined;
  /** True with optimistic writes: their reads inside a transaction do not see its own writes. */
  readonly listsAfterCommit: boolean;
  /** Optimistic writes that had to run again in a transaction (a contended row, a taken key, ...). */
  optimisticMisses = 0;
  private readonly optimistic: boolean;
  private readonly sessions: SqlDriverOptions['sessions'];

  constructor(
    readonly name: 'sqlite' | 'postgres',
    private readonly sql: SqlDriver,
    private readonly onClose: () => Promise<void> = () => sql.close(),
    options: SqlDriverOptions = {},
  ) {
    super(sql);
    this.sessions = options.sessions;
    this.blobCache = new BlobCache(options.checkpointCacheChars);
    this.optimistic = options.fastPaths !== false && sql.optimistic !== undefined;
    this.listsAfterCommit = this.optimistic;
    // SQLite answers in-process: the generic path's reads cost what one statement would.
    this.fast =
      name === 'postgres' && options.fastPaths !== false && options.sessions === undefined
        ? {
            sessionHead: (scope, id, reads, now) => this.selectHead(scope, id, reads, now),
            sessionHeadLeased: async (scope, id, reads, lease, now) => {
              let outcome = { taken: false, seen: true };
              const head = await this.selectHead(scope, id, reads, now, {
                take: { scope, ...lease },
                leased: (told) => {
                  outcome = told;
                },
              });
              return { head, taken: outcome.taken, fresh: !outcome.seen };
            },
          }
        : undefined;
  }

  /** PostgreSQL's head in one statement (session-head.ts), told to the known rows. */
  private selectHead(
    scope: ReadScope,
    id: string,
    reads: HeadReads,
    now: string,
    lease?: Parameters<typeof selectSessionHead>[7],
  ): Promise<SessionHead | null> {
    return selectSessionHead(
      this.sql.query,
      scope,
      id,
      reads,
      now,
      async (run) => {
        this.reads ??= this.rows(this.sql.query, false);
        const newest = await this.reads.latestCheckpoint(scope, run);
        return newest?.label ?? null;
      },
      (session, messageCount, open, all) => this.known.head(scope, { session, messageCount }, open, all),
      lease,
    );
  }

  /** The rows of reads outside a transaction: made once (they keep no state of a call). */
  private reads: DriverTx | null = null;
  /**
   * The rows of a plain write transaction, made once and lent to one transaction at a time (their
   * transaction state cleared for each): making them is a closure per method, every call.
   */
  private lent: {
    readonly q: SqlExecutor;
    readonly env: SqlTxEnv;
    readonly tx: DriverTx;
    busy: boolean;
  } | null = null;

  /** Rows this store last read or wrote, for its optimistic writes (known-rows.ts). */
  private readonly known = new KnownRows();

  private env(q: SqlExecutor, write: boolean, deferred: DeferredWrites | null): SqlTxEnv {
    return {
      knownRows: this.optimistic ? this.known : null,
      known:
        deferred === null
          ? null
          : {
              rows: this.known,
              touched: touched(),
              tasksRead: new Map(),
              actions: new Map(),
              memory: new Map(),
            },
      q,
      dialect: this.sql.dialect,
      sessionLock: write && deferred === null && this.sql.dialect.name === 'postgres' ? ' FOR UPDATE' : '',
      deferred,
      pendingSessions: new Map(),
      kept: new Map(),
      counts: new Map(),
      seen: write ? new Map() : null,
      sessions: this.sessions,
      lastCheckpoints: this.lastCheckpoints,
      blobCache: this.blobCache,
    };
  }

  private rows(q: SqlExecutor, write: boolean, deferred: DeferredWrites | null = null): DriverTx {
    return rowsOf(this.env(q, write, deferred));
  }

  /**
   * Runs `work` on the write rows of `q` without deferred writes: the lent ones when they are free and
   * of the same executor (SQLite hands every transaction the same one), else new ones.
   */
  private async withWriteRows<T>(q: SqlExecutor, work: (tx: DriverTx) => Promise<T>): Promise<T> {
    let lent = this.lent;
    if (lent === null || lent.busy || lent.q !== q) {
      const env = this.env(q, true, null);
      const fresh = { q, env, tx: rowsOf(env), busy: false };
      if (lent === null || !lent.busy) this.lent = fresh;
      lent = fresh;
    } else {
      const { env } = lent;
      env.pendingSessions.clear();
      env.kept.clear();
      env.counts.clear();
      env.seen?.clear();
    }
    lent.busy = true;
    try {
      return await work(lent.tx);
    } finally {
      lent.busy = false;
      // Written here, a session the optimistic writes know would only fail their hold.
      for (const id of lent.env.seen?.keys() ?? []) this.known.sessions.delete(id);
    }
  }

  /**
   * One database transaction; a single write runs as a statement of its own (each write call of this
   * driver is one statement, atomic by itself), sparing BEGIN and COMMIT (round trips on PostgreSQL), and
   * any other work first optimistically (reads, then its writes as one statement: postgres/optimistic.ts),
   * in a transaction only when that misses.
   */
  async transaction<T>(
    work: (tx: DriverTx) => Promise<T>,
    options?: { readonly single?: boolean },
  ): Promise<T> {
    if (options?.single === true) return this.withWriteRows(this.sql.query, work);
    if (this.optimistic && this.sql.optimistic !== undefined) {
      const attempt: { env: SqlTxEnv | null } = { env: null };
      try {
        const result = await this.sql.optimistic((q) => {
          attempt.env = this.env(q, true, q);
          return work(rowsOf(attempt.env));
        });
        if (attempt.env !== null) this.learn(attempt.env);
        return result;
      } catch (error) {
        if (attempt.env !== null) this.unlearn(attempt.env);
        if (!(error instanceof OptimisticMiss)) throw error;
        this.optimisticMisses++;
      }
    }
    return this.sql.transaction((q) => this.withWriteRows(q, work));
  }

  /**
   * Forgets what an attempt that did not land relied on or meant to write: the transaction that runs the
   * work again (or another writer) leaves those rows otherwise, and a known row gone stale costs a miss.
   */
  private unlearn({ known: use, seen, kept }: SqlTxEnv): void {
    if (use === null) return;
    const { touched: rows } = use;
    for (const id of seen?.keys() ?? []) rows.sessions.add(id);
    for (const row of kept.values()) {
      if (row.kind !== 'task') continue;
      rows.tasks.add(row.row.id);
      rows.users.add(userKey(row.row));
    }
    for (const id of use.actions.keys()) rows.actions.add(id);
    for (const name of use.memory.keys()) rows.memory.add(name);
    this.known.forget(rows);
  }

  /** What an optimistic attempt that landed leaves the rows: as it read and wrote them. */
  private learn({ known: use, seen, counts, kept }: SqlTxEnv): void {
    if (use === null) return;
    const { rows } = use;
    for (const id of use.touched.sessions) if (!seen?.has(id)) rows.sessions.delete(id);
    for (const [id, session] of seen ?? []) {
      const count = counts.get(id);
      if (count === undefined) rows.sessions.delete(id);
      else rows.sessions.set(id, { session, messageCount: count.stored + count.added });
    }
    for (const [id, task] of use.tasksRead) rows.tasks.set(id, task);
    const written: KeptTask[] = [];
    for (const row of kept.values()) {
      if (row.kind !== 'task') continue;
      rows.tasks.set(row.row.id, row.row);
      written.push(row);
    }
    if (written.length > 0) learnOpenTasks(rows, written);
    for (const [id, action] of use.actions) rows.actions.set(id, action);
    for (const [name, item] of use.memory) rows.memory.set(name, item);
  }

  /**
   * Reads as single statements, without a transaction's round trips. Blobs are only ever removed with the
   * checkpoints that need them, so the one race is a prune between a checkpoint's row and its blobs: then
   * the read runs again on one snapshot.
   */
  async read<T>(work: (tx: DriverReads) => Promise<T>): Promise<T> {
    try {
      this.reads ??= this.rows(this.sql.query, false);
      return await work(this.reads);
    } catch (error) {
      if (!(error instanceof MissingBlobError)) throw error;
      return this.sql.snapshot((q) => work(this.rows(q, false)));
    }
  }

  /** The database's cursor key (made by migration 3), read once. */
  cursorKey(): Promise<Buffer> {
    if (this.key === null) {
      const reading = this.sql.query
        .all("SELECT value FROM agentstate_keys WHERE name = 'cursor'")
        .then((rows) => cursorKeyFromHex(String(rows[0]?.value ?? '')));
      reading.catch(() => {
        if (this.key === reading) this.key = null;
      });
      this.key = reading;
    }
    return this.key;
  }

  async ping(): Promise<boolean> {
    try {
      return await this.sql.ping();
    } catch {
      return false;
    }
  }

  close(): Promise<void> {
    return this.onClose();
  }
}

type KeptTask = Extract<KeptRow, { kind: 'task' }>;

/** Each user's known list of open tasks as `written` leaves it (forgotten where it cannot tell). */
function learnOpenTasks(rows: KnownRows, written: readonly KeptTask[]): void {
  const users = new Map<string, KeptTask[]>();
  for (const row of written) {
    const user = userKey(row.row);
    users.set(user, [...(users.get(user) ?? []), row]);
  }
  for (const [user, changed] of users) {
    let open = rows.openTasks.get(user);
    if (open === undefined) continue;
    const created = changed.filter((row) => row.previous === null);
    if (created.length > 1) {
      rows.openTasks.delete(user);
      continue;
    }
    let lost = false;
    for (const { row: task, previous } of changed) {
      const at = open.findIndex((t) => t.id === task.id);
      const isOpen = (OPEN_TASK_STATES as readonly string[]).includes(task.state);
      if (at >= 0) {
        if (isOpen) open[at] = task;
        else open = open.filter((t) => t.id !== task.id);
      } else if (isOpen) {
        if (previous !== null) lost = true;
        else open.unshift(task);
      }
    }
    if (lost) rows.openTasks.delete(user);
    else rows.openTasks.set(user, open);
  }
}

function rowsOf(env: SqlTxEnv): DriverTx {
  return {
    ...sessionRows(env),
    ...taskRows(env),
    ...checkpointRows(env),
    ...itemRows(env),
    ...eventRows(env),
  };
}
