/** The load report's machine figures (/proc/stat) and its list of the turns that make the p99. */

import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import {
  parseProcStat,
  readCpuTimes,
  StealSampler,
  sumUsage,
  usageBetween,
} from '../../src/harness/load/machine.js';
import {
  parsePidStat,
  phaseCpu,
  readRunCpu,
  sumPhaseCpu,
  treeCpuMs,
} from '../../src/harness/load/process-cpu.js';
import { median } from '../../src/harness/load/stats.js';
import { pooledSlowest, slowestTurns, turnsAtOrAboveP99 } from '../../src/harness/load/tail.js';
import type { SimUser } from '../../src/harness/load/user.js';

const STAT = `cpu  57987 10 12244 142041 1831 3 1074 4572 0 0
cpu0 28000 5 6000 71000 900 1 500 2300 0 0
intr 1 2 3
`;

describe("the run's processes' CPU from /proc/<pid>/stat", () => {
  it('reads the parent and user + system time, whatever the command name holds', () => {
    const line = '4242 (node (a) b) S 4100 4242 4242 0 -1 4194304 100 0 0 0 250 31 7 2 20 0 11 0 99';
    expect(parsePidStat(line)).toEqual({ ppid: 4100, cpu_ms: (250 + 31) * 10 });
    expect(parsePidStat('no parenthesis here')).toBeNull();
    expect(parsePidStat('1 (x) S y')).toBeNull();
  });

  it('splits a phase between server, airline, generator and the rest, and pools phases', () => {
    const before = { server: 1000, airline: 200, generator: 50 };
    const after = { server: 1500, airline: 260, generator: 90 };
    const one = phaseCpu(before, after, 25, 800);
    expect(one).toEqual({
      server_ms: 500,
      server_ms_per_turn: 20,
      airline_ms: 60,
      generator_ms: 40,
      rest_ms: 200,
    });
    // an external server: nothing known of it, nor of the rest
    expect(phaseCpu({ ...before, server: null }, { ...after, server: null }, 25, 800)).toMatchObject({
      server_ms: null,
      server_ms_per_turn: null,
      rest_ms: null,
    });
    const two = sumPhaseCpu([
      { cpu: one, turns: 25 },
      { cpu: { ...one, server_ms: 1000 }, turns: 25 },
    ]);
    expect(two).toEqual({
      server_ms: 1500,
      server_ms_per_turn: 30,
      airline_ms: 120,
      generator_ms: 80,
      rest_ms: 400,
    });
    expect(
      sumPhaseCpu([
        { cpu: one, turns: 25 },
        { cpu: null, turns: 25 },
      ]),
    ).toBeNull();
  });

  it.runIf(process.platform === 'linux')(
    "counts a process's children with it (a cluster's workers), and this process apart",
    async () => {
      // A child that burns 300 ms of CPU (its own CPU time, not the clock's: on a busy machine 300 ms of
      // wall time may be much less CPU), says so, and waits to be killed.
      const child = spawn(
        process.execPath,
        [
          '-e',
          'const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; }; const t = cpu(); while (cpu() - t < 300); console.log("spun"); setInterval(() => {}, 1000);',
        ],
        { stdio: ['ignore', 'pipe', 'inherit'] },
      );
      try {
        await once(child.stdout, 'data');
        const own = parsePidStat(readFileSync(`/proc/${process.pid}/stat`, 'utf8'))?.cpu_ms ?? 0;
        const tree = treeCpuMs(process.pid) ?? 0;
        expect(tree - own).toBeGreaterThanOrEqual(200);
        expect(treeCpuMs(child.pid ?? -1)).toBeGreaterThanOrEqual(200);
        const reading = readRunCpu({ server: child.pid ?? null, airline: null });
        expect(reading.server).toBeGreaterThanOrEqual(200);
        expect(reading.airline).toBeNull();
        expect(reading.generator).toBeGreaterThan(0);
      } finally {
        child.kill('SIGKILL');
      }
      expect(treeCpuMs(2 ** 22 + 12345)).toBeNull();
    },
  );
});

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
