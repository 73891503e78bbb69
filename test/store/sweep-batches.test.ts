/** The pacing of the SQL sweeps: batch sizes that follow how long a transaction took, yields between. */
import { describe, expect, it } from 'vitest';
import { DeletedTally, inBatches, Pacer } from '../../src/store/sql/sweep-batches.js';

const pacing = { first: 32, min: 8, max: 128, targetMs: 10 };

describe('Pacer', () => {
  it('halves after a slow batch, doubles after a quick one, and stays within min and max', () => {
    const pacer = new Pacer(pacing);
    expect(pacer.size).toBe(32);
    pacer.observe(11);
    expect(pacer.size).toBe(16);
    pacer.observe(5); // between a quarter of the target and the target: kept
    expect(pacer.size).toBe(16);
    for (let i = 0; i < 5; i++) pacer.observe(100);
    expect(pacer.size).toBe(8);
    for (let i = 0; i < 10; i++) pacer.observe(1);
    expect(pacer.size).toBe(128);
  });

  it('starts within min and max whatever `first` says', () => {
    expect(new Pacer({ ...pacing, first: 1000 }).size).toBe(128);
    expect(new Pacer({ ...pacing, first: 2 }).size).toBe(8);
  });
});

describe('inBatches', () => {
  it('runs batches until one comes back short, never past the limit', async () => {
    const sizes: number[] = [];
    let left = 100;
    const step = async (size: number) => {
      sizes.push(size);
      const done = Math.min(size, left);
      left -= done;
      return done;
    };
    expect(await inBatches({ pacer: new Pacer({ ...pacing, targetMs: 1e9 }), limit: 1000, step })).toBe(100);
    expect(sizes).toEqual([32, 64, 128]);
    left = 1000;
    sizes.length = 0;
    expect(await inBatches({ pacer: new Pacer({ ...pacing, targetMs: 1e9 }), limit: 50, step })).toBe(50);
    expect(sizes).toEqual([32, 18]);
  });

  it('lets other work run between two batches, and calls `between` after each batch that deleted rows', async () => {
    let ticks = 0;
    let ticking = true;
    const tick = () => {
      ticks++;
      if (ticking) setImmediate(tick);
    };
    setImmediate(tick);
    const seen: number[] = [];
    let between = 0;
    let left = 50;
    const done = await inBatches({
      pacer: new Pacer({ first: 10, min: 10, max: 10, targetMs: 1e9 }),
      limit: 1000,
      step: async () => {
        seen.push(ticks);
        const n = Math.min(10, left);
        left -= n;
        return n;
      },
      between: async () => {
        between++;
      },
    });
    ticking = false;
    expect(done).toBe(50);
    // six batches (the last one empty); the event loop turned before each batch after the first
    expect(seen).toHaveLength(6);
    for (let i = 1; i < seen.length; i++) expect(seen[i]).toBeGreaterThan(seen[i - 1] as number);
    expect(between).toBe(5);
  });
});

describe('DeletedTally', () => {
  it('adds up per table and forgets only what a reclaim took', () => {
    const tally = new DeletedTally();
    tally.add('sessions', 10);
    tally.add('messages', 0);
    const other = new DeletedTally();
    other.add('sessions', 5);
    other.add('messages', 20);
    tally.merge(other);
    const snapshot = tally.snapshot();
    expect([...snapshot]).toEqual([
      ['sessions', 15],
      ['messages', 20],
    ]);
    tally.add('sessions', 3); // deleted while the reclaim ran
    tally.settle(snapshot, ['sessions']);
    expect(Object.fromEntries(tally.snapshot())).toEqual({ sessions: 3, messages: 20 });
    tally.settle(tally.snapshot(), ['sessions', 'messages']);
    expect(tally.snapshot().size).toBe(0);
  });
});
