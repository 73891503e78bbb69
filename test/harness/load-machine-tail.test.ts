/** The load report's machine figures (/proc/stat) and its list of the turns that make the p99. */

import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import {
  parseProcStat,
  readCpuTimes,
  StealSampler,
  sumUsage,
  usageBetween,
} from '../../src/harness/load/machine.js';
import { median } from '../../src/harness/load/stats.js';
import { pooledSlowest, slowestTurns, turnsAtOrAboveP99 } from '../../src/harness/load/tail.js';
import type { SimUser } from '../../src/harness/load/user.js';

const STAT = `cpu  57987 10 12244 142041 1831 3 1074 4572 0 0
cpu0 28000 5 6000 71000 900 1 500 2300 0 0
intr 1 2 3
`;

describe('machine usage from /proc/stat', () => {
  it('reads the aggregate cpu line in ms (USER_HZ 100)', () => {
    expect(parseProcStat(STAT)).toEqual({
      busy_ms: (57987 + 10 + 12244 + 3 + 1074) * 10,
      idle_ms: (142041 + 1831) * 10,
      steal_ms: 4572 * 10,
    });
  });

  it('refuses text without a whole cpu line', () => {
    expect(parseProcStat('intr 1 2 3\n')).toBeNull();
    expect(parseProcStat('cpu  1 2 3\n')).toBeNull();
    expect(parseProcStat('cpu  1 2 3 4 5 6 7 x\n')).toBeNull();
  });

  it('gives the busy and stolen share of an interval, and sums intervals', () => {
    const a = { busy_ms: 1000, idle_ms: 5000, steal_ms: 100 };
    const b = { busy_ms: 1600, idle_ms: 5300, steal_ms: 200 };
    const u = usageBetween(a, b);
    expect(u).toEqual({ busy_ms: 600, steal_ms: 100, total_ms: 1000, cpu_busy_pct: 60, steal_pct: 10 });
    expect(usageBetween(null, b)).toBeNull();
    const twice = sumUsage([u, u]);
    expect(twice).toEqual({ busy_ms: 1200, steal_ms: 200, total_ms: 2000, cpu_busy_pct: 60, steal_pct: 10 });
    expect(sumUsage([u, null])).toBeNull();
    expect(sumUsage([])).toBeNull();
  });

  it('reads this machine where /proc/stat exists', () => {
    const now = readCpuTimes();
    if (process.platform !== 'linux') {
      expect(now).toBeNull();
      return;
    }
    expect(now?.busy_ms).toBeGreaterThan(0);
    expect(now?.idle_ms).toBeGreaterThanOrEqual(0);
  });

  it('samples steal over a phase and tells it for any window inside it', async () => {
    const sampler = new StealSampler().start();
    const from = performance.now();
    await sleep(60);
    const to = performance.now();
    sampler.stop();
    if (process.platform !== 'linux') {
      expect(sampler.between(from, to)).toBeNull();
      return;
    }
    const steal = sampler.between(from, to);
    expect(steal).not.toBeNull();
    expect(steal).toBeGreaterThanOrEqual(0);
    expect((steal as number) % 10).toBe(0);
    // outside the sampled time: not known
    expect(sampler.between(from - 1000, to)).toBeNull();
    expect(sampler.between(from, to + 1000)).toBeNull();
  });
});

function user(turns: [number, number][]): SimUser {
  return {
    turns: turns.map(([startedAt, endedAt]) => ({ startedAt, endedAt, ms: endedAt - startedAt })),
  } as unknown as SimUser;
}

describe('the turns that make the p99', () => {
  it('counts as many as sit at or above the nearest-rank p99', () => {
    expect(turnsAtOrAboveP99(0)).toBe(0);
    expect(turnsAtOrAboveP99(25)).toBe(1);
    expect(turnsAtOrAboveP99(100)).toBe(2);
    expect(turnsAtOrAboveP99(250)).toBe(3);
    expect(turnsAtOrAboveP99(1250)).toBe(13);
  });

  it('lists the slowest with the turns that overlapped each, and pools runs', () => {
    // user a: turn 1 [0, 10], turn 2 [20, 90]; user b: turn 1 [5, 25], turn 2 [30, 40]; user c: [95, 100]
    const users = [
      user([
        [0, 10],
        [20, 90],
      ]),
      user([
        [5, 25],
        [30, 40],
      ]),
      user([[95, 100]]),
    ];
    expect(slowestTurns(users, 2)).toEqual([
      { ms: 70, turn: 2, overlapping: 2, steal_ms: null },
      { ms: 20, turn: 1, overlapping: 2, steal_ms: null },
    ]);
    // 5 turns: the p99 rests on one; the steal during it comes from the sampler's window
    const windows: [number, number][] = [];
    const stealBetween = (from: number, to: number) => {
      windows.push([from, to]);
      return 10;
    };
    expect(slowestTurns(users, undefined, stealBetween)).toEqual([
      { ms: 70, turn: 2, overlapping: 2, steal_ms: 10 },
    ]);
    expect(windows).toEqual([[20, 90]]);
    const other = [{ ms: 80, turn: 5, overlapping: 0, steal_ms: 30 }];
    expect(pooledSlowest([slowestTurns(users, 20), other], 250)).toEqual([
      { ms: 80, turn: 5, overlapping: 0, steal_ms: 30 },
      { ms: 70, turn: 2, overlapping: 2, steal_ms: null },
      { ms: 20, turn: 1, overlapping: 2, steal_ms: null },
    ]);
  });
});

describe("the median of the pairs' ratios", () => {
  it('is the middle one, or the mean of the two middle ones', () => {
    expect(median([])).toBe(0);
    expect(median([2.5])).toBe(2.5);
    expect(median([6.13, 2.14, 2.25, 2.17, 2.16])).toBe(2.17);
    expect(median([1.2, 1.4, 3, 1.1])).toBe(1.3);
  });
});
