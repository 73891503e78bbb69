/**
 * The small surface each SQL database implements (SQLite, PostgreSQL). Every query of agentstate is
 * written once against it, with `?` placeholders; an executor translates them to its own form.
 */

export type SqlParam = string | number | null;
export type SqlRow = Record<string, unknown>;

/** Runs statements: inside a transaction, or one at a time on the database. */
export interface SqlExecutor {
  all(sql: string, params?: readonly SqlParam[]): Promise<SqlRow[]>;
  /** The first row, or undefined. */
  get(sql: string, params?: readonly SqlParam[]): Promise<SqlRow | undefined>;
  /** The number of rows the statement changed. */
  run(sql: string, params?: readonly SqlParam[]): Promise<number>;
}

/** How a database spells the few things the dialects do not share (used by the schema only). */
export interface SqlDialect {
  readonly name: 'sqlite' | 'postgres';
  /** An auto-incrementing integer primary key column type. */
  readonly serialKey: string;
  /** Appended to a SELECT that claims rows for deletion: '' or ' FOR UPDATE SKIP LOCKED'. */
  readonly claimRows: string;
}

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
  /** Runs `fn` on one consistent snapshot (a read transaction). */
  snapshot<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T>;
  /**
   * Runs `fn` in a transaction that holds the database's migration lock (SQLite: BEGIN IMMEDIATE;
   * PostgreSQL: pg_advisory_xact_lock), so two processes opening at once never both migrate.
   */
  migrationTransaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T>;
  /**
   * Gives space freed by a sweep back, when the database does that on request (SQLite with
   * auto_vacuum=INCREMENTAL: `PRAGMA incremental_vacuum`); absent otherwise.
   */
  reclaim?(): Promise<void>;
  /** True when a statement failed on a unique or primary key constraint. */
  isUniqueViolation(error: unknown): boolean;
  ping(): Promise<boolean>;
  close(): Promise<void>;
}
