/**
 * What the whole machine did during a phase, from Linux's `/proc/stat`: how busy its CPUs were and how much
 * CPU time the hypervisor took away (steal). On a virtual machine a vCPU that is descheduled stops every
 * process on it for that long; under load that lands on several turns in flight at once, alone on at most
 * one. Null where `/proc/stat` does not exist.
 */
import { readFileSync } from 'node:fs';

/** Cumulative CPU time of every CPU together since boot, in ms. */
export interface CpuTimes {
  readonly busy_ms: number;
  readonly idle_ms: number;
  readonly steal_ms: number;
}

/** CPU time of every CPU together over an interval. */
export interface MachineUsage {
  readonly busy_ms: number;
  readonly steal_ms: number;
  /** busy + idle + steal: the interval's length times the CPUs. */
  readonly total_ms: number;
  readonly cpu_busy_pct: number;
  readonly steal_pct: number;
}

/** `/proc/stat` counts in USER_HZ, which Linux fixes at 100 per second for every architecture it exports. */
const MS_PER_TICK = 10;

/** The aggregate `cpu` line: user nice system idle iowait irq softirq steal (guest time is within user). */
export function parseProcStat(text: string): CpuTimes | null {
  const line = text.split('\n').find((l) => l.startsWith('cpu '));
  if (line === undefined) return null;
  const f = line.trim().split(/\s+/).slice(1).map(Number);
  if (f.length < 8 || f.some((n) => !Number.isFinite(n))) return null;
  const [user, nice, system, idle, iowait, irq, softirq, steal] = f as [
    number,
    number,
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  return {
    busy_ms: (user + nice + system + irq + softirq) * MS_PER_TICK,
    idle_ms: (idle + iowait) * MS_PER_TICK,
    steal_ms: steal * MS_PER_TICK,
  };
}

export function readCpuTimes(): CpuTimes | null {
  try {
    return parseProcStat(readFileSync('/proc/stat', 'utf8'));
  } catch {
    return null;
  }
}

const pct = (part: number, whole: number) => (whole > 0 ? Math.round((part / whole) * 1000) / 10 : 0);

function usage(busy_ms: number, steal_ms: number, total_ms: number): MachineUsage {
  return {
    busy_ms,
    steal_ms,
    total_ms,
    cpu_busy_pct: pct(busy_ms, total_ms),
    steal_pct: pct(steal_ms, total_ms),
  };
}

export function usageBetween(before: CpuTimes | null, after: CpuTimes | null): MachineUsage | null {
  if (before === null || after === null) return null;
  const busy = after.busy_ms - before.busy_ms;
  const steal = after.steal_ms - before.steal_ms;
  const total = busy + steal + (after.idle_ms - before.idle_ms);
  return usage(busy, steal, total);
}

/** Several intervals as one (their times summed); null when any is unknown. */
export function sumUsage(parts: readonly (MachineUsage | null)[]): MachineUsage | null {
  if (parts.length === 0 || parts.some((p) => p === null)) return null;
  const known = parts as readonly MachineUsage[];
  const sum = (pick: (u: MachineUsage) => number) => known.reduce((n, u) => n + pick(u), 0);
  return usage(
    sum((u) => u.busy_ms),
    sum((u) => u.steal_ms),
    sum((u) => u.total_ms),
  );
}

/** How often the sampler reads `/proc/stat` while a phase runs. */
const SAMPLE_EVERY_MS = 10;

/**
 * The machine's steal over time while a phase runs, read every 10 ms, so that the steal during any one
 * turn can be told (to the 10 ms tick `/proc/stat` counts in). Does nothing where `/proc/stat` is missing.
 */
export class StealSampler {
  private readonly at: number[] = [];
  private readonly steal: number[] = [];
  private timer: NodeJS.Timeout | null = null;

  start(): this {
    if (readCpuTimes() === null) return this;
    this.sample();
    this.timer = setInterval(() => this.sample(), SAMPLE_EVERY_MS);
    this.timer.unref();
    return this;
  }

  stop(): void {
    if (this.timer === null) return;
    clearInterval(this.timer);
    this.timer = null;
    this.sample();
  }

  private sample(): void {
    const now = readCpuTimes();
    if (now === null) return;
    this.at.push(performance.now());
    this.steal.push(now.steal_ms);
  }

  /**
   * Steal (all CPUs) counted between the last sample at or before `from` and the first at or after `to`
   * (`performance.now()` times); null when the interval is not covered by samples.
   */
  between(from: number, to: number): number | null {
    const n = this.at.length;
    if (n < 2 || from < (this.at[0] as number) || to > (this.at[n - 1] as number)) return null;
    let first = 0;
    while (first + 1 < n && (this.at[first + 1] as number) <= from) first++;
    let last = first;
    while (last < n - 1 && (this.at[last] as number) < to) last++;
    return (this.steal[last] as number) - (this.steal[first] as number);
  }
}
