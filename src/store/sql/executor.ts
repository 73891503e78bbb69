/**
 * The small surface each SQL database implements (SQLite, PostgreSQL). Every query of agentstate is
 * written once against it, with `?` placeholders; an executor translates them to its own form.
 */

export type SqlParam = string | number | null;

/**
 * Statements this thread's SQL stores have sent to their database since the thread started, by dialect:
 * every statement of the store API, BEGIN, COMMIT and ROLLBACK included. On PostgreSQL each one is a round
 * trip to the server. A plain count (an increment per statement), read by the metrics
 * (`agentstate_store_round_trips_total`, observability/metrics.ts): the load harness reads it around a turn.
 */
export const statementsSent = { sqlite: 0, postgres: 0 };

/** An optimistic attempt that cannot finish (nothing of it was written): run the work in a transaction. */
export class OptimisticMiss extends Error {
  constructor(reason: string) {
    super(`optimistic write missed: ${reason}`);
    this.name = 'OptimisticMiss';
  }
}

/** Writes an optimistic attempt keeps for its one statement at the end (postgres/optimistic.ts). */
export interface DeferredWrites {
  /**
   * A condition (a SELECT that must find a row) checked and locked with the writes, under `key`. `assumed`:
   * it stands for a read the attempt did not make (a row it knew): checked even when nothing is written.
   */
  hold(key: string, sql: string, params: readonly SqlParam[], assumed?: boolean): void;
  /** A write kept under `key`, replacing a hold or write of the same key. */
  write(key: string, sql: string, params: readonly SqlParam[]): void;
  /** A read of one row by its key, which the caller knows this attempt has not written. */
  getRow(sql: string, params: readonly SqlParam[]): Promise<SqlRow | undefined>;
}

/**
 * A LIMIT whose value is a parameter. SQLite's planner reads the value bound to a plain `LIMIT ?` and marks
 * the statement to be prepared again each time it is bound anew: every run of such a statement was parsed
 * and planned again (25 of the 35 µs of a one-row read here). Behind a CAST the statement is planned once.
 */
export const LIMIT_PARAM = 'LIMIT CAST(? AS INTEGER)';
export type SqlRow = Record<string, unknown>;

/** Runs statements: inside a transaction, or one at a time on the database. */
export interface SqlExecutor {
  all(sql: string, params?: readonly SqlParam[]): Promise<SqlRow[]>;
  /** The first row, or undefined. */
  get(sql: string, params?: readonly SqlParam[]): Promise<SqlRow | undefined>;
  /** The number of rows the statement changed. */
  run(sql: string, params?: readonly SqlParam[]): Promise<number>;
}

/** How a database spells the few things the dialects do not share (the schema and the sweeps). */
export interface SqlDialect {
  readonly name: 'sqlite' | 'postgres';
  /** An auto-incrementing integer primary key column type. */
  readonly serialKey: string;
  /** Appended to a SELECT that claims rows for deletion: '' or ' FOR UPDATE SKIP LOCKED'. */
  readonly claimRows: string;
  /**
   * The condition that `column` is one of the integers of one parameter holding them as a JSON array
   * (`'[3,5,8]'`), so a statement names a whole batch of rows with one fixed text and one parameter. PostgreSQL spells it
   * `= ANY(ARRAY(...))`, which it always runs as an index lookup (an `IN (subquery)` may become a hash
   * join over the whole table).
   */
  inIntegers(column: string): string;
  /**
   * The hidden column that names a row where it is stored ('rowid' / 'ctid'), so a batch of rows of a table
   * without an integer key is deleted by where they are (`rowid IN (SELECT rowid ...)`), never by a join
   * on a composite key (which PostgreSQL may plan as a scan of the table).
   */
  readonly rowId: string;
}

/**
 * How the sweeps size their write transactions: the first holds `first` rows; then the size is halved
 * (down to `min`) when a transaction took longer than `targetMs` and doubled (up to `max`) when it took
 * under a quarter of it. Between two transactions the sweep lets the event loop run other work.
 */
export interface SweepPacing {
  readonly first: number;
  readonly min: number;
  readonly max: number;
  readonly targetMs: number;
}

/** Rows a sweep deleted, by table name. */
export type DeletedRows = ReadonlyMap<string, number>;

/** One database: the adapter's executor, transactions, and its lifecycle. */
export interface SqlDriver {
  readonly dialect: SqlDialect;
  /** Statements outside a transaction, each on its own. */
  readonly query: SqlExecutor;
  /**
   * Runs `fn` in one write transaction (SQLite: BEGIN IMMEDIATE). Commits when it resolves, rolls back
   * when it throws, and rethrows.
   */
  transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T>;
  /**
   * Runs `fn` optimistically (PostgreSQL, see postgres/optimistic.ts): reads as single statements, writes
   * kept and sent as one guarded statement at the end. Throws `OptimisticMiss` (nothing written) when the
   * work must run again in `transaction`. Absent: every write runs in `transaction`.
   */
  optimistic?<T>(fn: (tx: SqlExecutor & DeferredWrites) => Promise<T>): Promise<T>;
  /** Runs `fn` on one consistent snapshot (a read transaction). */
  snapshot<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T>;
  /**
   * Runs `fn` in a transaction that holds the database's migration lock (SQLite: BEGIN IMMEDIATE;
   * PostgreSQL: pg_advisory_xact_lock), so two processes opening at once never both migrate.
   */
  migrationTransaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T>;
  /** How the sweeps size their transactions on this database. */
  readonly sweepPacing: SweepPacing;
  /**
   * Called by a sweep between two of its transactions, on its own: SQLite copies what the last one wrote
   * from the WAL into the database file (a passive checkpoint of a few pages), so the WAL never grows to
   * the automatic checkpoint of 1000 pages, which would run inside the commit of some request and hold
   * the process for tens of ms. Absent when there is nothing to do.
   */
  checkpoint?(): Promise<void>;
  /**
   * Gives storage freed by sweeps back (SQLite: `PRAGMA incremental_vacuum` in short steps; PostgreSQL:
   * VACUUM of the tables that lost many rows, and a rebuild of their bloated indexes). Called at the end of a
   * sweep with the rows deleted per table since the tables were last reclaimed; returns the tables it
   * reclaimed (the others keep counting). Absent when the database has nothing to do.
   */
  reclaim?(deleted: DeletedRows): Promise<readonly string[]>;
  /** True when a statement failed on a unique or primary key constraint. */
  isUniqueViolation(error: unknown): boolean;
  ping(): Promise<boolean>;
  close(): Promise<void>;
}
