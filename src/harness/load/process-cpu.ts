/**
 * Which of the run's processes used the machine's CPU during a phase, from Linux's `/proc/<pid>/stat`: the
 * server (with its cluster workers and threads), the demo airline, and this process (the simulated users,
 * their checks and the samplers). What the machine spent besides is the rest: a store's own server
 * (PostgreSQL's backends), the kernel, anything else running. The server's CPU per turn says how much of a
 * core each turn costs it; under load a phase whose turns need more than a core at once queues them.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** `/proc/<pid>/stat` counts in USER_HZ, which Linux fixes at 100 per second. */
const MS_PER_TICK = 10;

export interface PidStat {
  readonly ppid: number;
  /** User plus system time of the process (every thread of it), in ms. */
  readonly cpu_ms: number;
}

/** `pid (comm) state ppid ... utime stime ...`; comm may hold spaces and parentheses, so split after the last ')'. */
export function parsePidStat(text: string): PidStat | null {
  const close = text.lastIndexOf(')');
  if (close < 0) return null;
  const f = text
    .slice(close + 1)
    .trim()
    .split(/\s+/);
  // After comm: state(0) ppid(1) pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime(11) stime(12)
  const ppid = Number(f[1]);
  const utime = Number(f[11]);
  const stime = Number(f[12]);
  if (![ppid, utime, stime].every(Number.isFinite)) return null;
  return { ppid, cpu_ms: (utime + stime) * MS_PER_TICK };
}

function readPidStat(pid: number): PidStat | null {
  try {
    return parsePidStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return null;
  }
}

/** CPU ms of a process and of every process below it now (a cluster's workers); null when it is gone. */
export function treeCpuMs(pid: number): number | null {
  const root = readPidStat(pid);
  if (root === null) return null;
  const children = new Map<number, number[]>();
  const cpu = new Map<number, number>();
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return root.cpu_ms;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = readPidStat(Number(entry));
    if (stat === null) continue;
    cpu.set(Number(entry), stat.cpu_ms);
    const siblings = children.get(stat.ppid);
    if (siblings === undefined) children.set(stat.ppid, [Number(entry)]);
    else siblings.push(Number(entry));
  }
  let total = root.cpu_ms;
  const stack = [...(children.get(pid) ?? [])];
  while (stack.length > 0) {
    const next = stack.pop() as number;
    total += cpu.get(next) ?? 0;
    stack.push(...(children.get(next) ?? []));
  }
  return total;
}

/** The processes a phase measures: the server's and the airline's pids, when this run started them. */
export interface RunProcesses {
  readonly server: number | null;
  readonly airline: number | null;
}

export interface PhaseCpu {
  /** The server process and its workers, in ms of CPU; null for a server this run did not start. */
  readonly server_ms: number | null;
  /** server_ms over the phase's turns. */
  readonly server_ms_per_turn: number | null;
  readonly airline_ms: number | null;
  /** This process: the simulated users, their checks, the samplers. */
  readonly generator_ms: number;
  /**
   * The machine's busy time less the three (null when one is unknown): a store's own server, the kernel,
   * anything else that ran.
   */
  readonly rest_ms: number | null;
}

interface CpuReading {
  readonly server: number | null;
  readonly airline: number | null;
  readonly generator: number;
}

export function readRunCpu(processes: RunProcesses | undefined): CpuReading {
  const usage = process.cpuUsage();
  return {
    server: processes?.server == null ? null : treeCpuMs(processes.server),
    airline: processes?.airline == null ? null : treeCpuMs(processes.airline),
    generator: (usage.user + usage.system) / 1000,
  };
}

const diff = (a: number | null, b: number | null) => (a === null || b === null ? null : Math.max(0, b - a));
const round = (n: number) => Math.round(n * 100) / 100;

export function phaseCpu(
  before: CpuReading,
  after: CpuReading,
  turns: number,
  machineBusyMs: number | null,
): PhaseCpu {
  const server = diff(before.server, after.server);
  const airline = diff(before.airline, after.airline);
  const generator = Math.round(after.generator - before.generator);
  return {
    server_ms: server,
    server_ms_per_turn: server === null || turns === 0 ? null : round(server / turns),
    airline_ms: airline,
    generator_ms: generator,
    rest_ms:
      machineBusyMs === null || server === null || airline === null
        ? null
        : Math.max(0, machineBusyMs - server - airline - generator),
  };
}

/** Several phases as one: their times summed, the server's per turn over all their turns. */
export function sumPhaseCpu(
  parts: readonly { readonly cpu: PhaseCpu | null; readonly turns: number }[],
): PhaseCpu | null {
  if (parts.length === 0 || parts.some((p) => p.cpu === null)) return null;
  const known = parts.map((p) => p.cpu as PhaseCpu);
  const sum = (pick: (c: PhaseCpu) => number | null): number | null =>
    known.some((c) => pick(c) === null) ? null : known.reduce((n, c) => n + (pick(c) as number), 0);
  const server = sum((c) => c.server_ms);
  const turns = parts.reduce((n, p) => n + p.turns, 0);
  return {
    server_ms: server,
    server_ms_per_turn: server === null || turns === 0 ? null : round(server / turns),
    airline_ms: sum((c) => c.airline_ms),
    generator_ms: sum((c) => c.generator_ms) ?? 0,
    rest_ms: sum((c) => c.rest_ms),
  };
}
