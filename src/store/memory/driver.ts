/**
 * The `memory:` driver: rows in Maps, for tests and prototypes; one process only, nothing survives it.
 * Transactions run one at a time, each with an undo log, so a call is atomic and concurrent callers see
 * one call's effects entirely or not at all.
 */
import type { SessionStatus } from '../../core/model.js';
import type { DriverReads, DriverTx, StoreDriver } from '../core/driver.js';
import type { CheckedRetention } from '../shared/retention.js';
import type { ActionStats, RetentionSweep, StoreCapabilities } from '../types.js';
import * as maintenance from './maintenance.js';
import { MemoryTx } from './rows.js';
import { createTables, type Tables, Tx } from './tables.js';

export class MemoryDriver implements StoreDriver {
  readonly name = 'memory';
  readonly capabilities: StoreCapabilities = { multiProcess: false, durable: false };
  private readonly tables: Tables = createTables();
  private seq = 0;
  /** The transaction running now; the next one waits for it. */
  private queue: Promise<unknown> = Promise.resolve();

  /** Runs `work` after every transaction before it, alone; on any error every write of it is undone. */
  private exclusive<T>(work: (tx: Tx) => Promise<T> | T): Promise<T> {
    const run = this.queue.then(async () => {
      const tx = new Tx();
      try {
        return await work(tx);
      } catch (error) {
        tx.rollback();
        throw error;
      }
    });
    this.queue = run.catch(() => undefined);
    return run;
  }

  private view(tx: Tx): MemoryTx {
    return new MemoryTx(this.tables, tx, () => ++this.seq);
  }

  transaction<T>(work: (tx: DriverTx) => Promise<T>): Promise<T> {
    return this.exclusive((tx) => work(this.view(tx)));
  }
  read<T>(work: (tx: DriverReads) => Promise<T>): Promise<T> {
    return this.exclusive((tx) => work(this.view(tx)));
  }
  async cursorKey(): Promise<Buffer> {
    return this.tables.cursorKey;
  }

  sweepExpired(now_ms: number, limit: number): Promise<number> {
    return this.exclusive((tx) => maintenance.sweepExpired(this.tables, tx, now_ms, limit));
  }
  sessionStats(now_ms: number): Promise<Record<SessionStatus, number>> {
    return this.exclusive(() => maintenance.sessionStats(this.tables, now_ms));
  }
  actionStats(): Promise<ActionStats> {
    return this.exclusive(() => maintenance.actionStats(this.tables));
  }
  sweepRetention(retention: CheckedRetention): Promise<RetentionSweep> {
    return this.exclusive((tx) => maintenance.sweepRetention(this.tables, tx, retention));
  }

  /** What the Maps hold right now for one tenant, expired or not: sessions and messages. */
  rawCounts(tenant_id: string): { sessions: number; messages: number } {
    let sessions = 0;
    let messages = 0;
    for (const [id, { rec }] of this.tables.sessions) {
      if (rec.tenant_id !== tenant_id) continue;
      sessions++;
      messages += this.tables.messages.get(id)?.length ?? 0;
    }
    return { sessions, messages };
  }

  async ping(): Promise<boolean> {
    return true;
  }
  async close(): Promise<void> {}
}
