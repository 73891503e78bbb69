/** What the SQL driver's rows of one transaction (or read) share. */

import type { LastCheckpoints } from './context.js';
import type { SqlDialect, SqlExecutor } from './executor.js';

export interface SqlTxEnv {
  readonly q: SqlExecutor;
  readonly dialect: SqlDialect;
  /**
   * Appended to a session's read in a write transaction: PostgreSQL's ' FOR UPDATE' (writers of one
   * session take turns, so the message count and version read stay true until the commit, and a session a
   * new record names cannot be deleted before it); '' for reads and for SQLite, whose writers are serial.
   */
  readonly sessionLock: string;
  /** Each session's message count as read, and the messages this transaction appended to it. */
  readonly counts: Map<string, { stored: number; added: number }>;
  /** The last checkpoint this store wrote in each run: the manifest a put encodes against. */
  readonly lastCheckpoints: LastCheckpoints;
}
