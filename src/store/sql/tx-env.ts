/** What the SQL driver's rows of one transaction (or read) share. */

import type { Session } from '../../core/model.js';
import type { ReadScope } from '../types.js';
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
}
