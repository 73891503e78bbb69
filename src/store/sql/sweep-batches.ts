/**
 * Sweeps in short write transactions: each batch's size follows how long the last one took (SweepPacing),
 * and between two batches the event loop runs whatever else is waiting (on SQLite every statement runs on
 * this process's event loop, so a long transaction would hold every other request of the process).
 */
import type { DeletedRows, SweepPacing } from './executor.js';

const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/** The size of the next batch of one kind of sweep, learned from the batches before it. */
export class Pacer {
  private current: number;

  constructor(private readonly pacing: SweepPacing) {
    this.current = Math.max(1, pacing.min, Math.min(pacing.first, pacing.max));
  }

  get size(): number {
    return this.current;
  }

  /** A full batch of `size` rows took `ms`. */
  observe(ms: number): void {
    if (ms > this.pacing.targetMs) this.current = Math.max(1, this.pacing.min, Math.floor(this.current / 2));
    else if (ms < this.pacing.targetMs / 4) this.current = Math.min(this.pacing.max, this.current * 2);
  }
}

export interface Batches {
  readonly pacer: Pacer;
  /** Most rows in all. */
  readonly limit: number;
  /** One write transaction deleting up to `size` rows of the kind; returns how many it deleted. */
  step(size: number): Promise<number>;
  /** Runs after each batch that deleted something, with the event loop let go before and after. */
  between?(): Promise<void>;
}

/** Runs `step` until a batch comes back short or `limit` rows went; returns the total. */
export async function inBatches({ pacer, limit, step, between }: Batches): Promise<number> {
  let total = 0;
  while (total < limit) {
    const size = Math.min(pacer.size, limit - total);
    const started = performance.now();
    const done = await step(size);
    total += done;
    if (done === size) pacer.observe(performance.now() - started);
    if (done > 0 && between !== undefined) {
      await yieldToEventLoop();
      await between();
    }
    if (done < size) break;
    if (total < limit) await yieldToEventLoop();
  }
  return total;
}

/** Rows deleted per table, added up until the tables are reclaimed. */
export class DeletedTally {
  private readonly counts = new Map<string, number>();

  add(table: string, rows: number): void {
    if (rows > 0) this.counts.set(table, (this.counts.get(table) ?? 0) + rows);
  }

  /** Adds the counts of another tally (a transaction's, once it committed). */
  merge(other: DeletedTally): void {
    for (const [table, rows] of other.counts) this.add(table, rows);
  }

  /** A copy of the counts so far. */
  snapshot(): DeletedRows {
    return new Map(this.counts);
  }

  /** Takes what `snapshot` counted off the tables that were reclaimed (rows deleted since stay counted). */
  settle(snapshot: DeletedRows, reclaimed: readonly string[]): void {
    for (const table of reclaimed) {
      const left = (this.counts.get(table) ?? 0) - (snapshot.get(table) ?? 0);
      if (left > 0) this.counts.set(table, left);
      else this.counts.delete(table);
    }
  }
}
