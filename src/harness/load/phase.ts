/** One phase of the run: its users open their sessions, then run their turns one user at a time or all at once. */
import { setTimeout as sleep } from 'node:timers/promises';
import { readAirlineTimings } from './airline-timings.js';
import { type MachineUsage, readCpuTimes, StealSampler, usageBetween } from './machine.js';
import { type PhaseCpu, phaseCpu, type RunProcesses, readRunCpu } from './process-cpu.js';
import { readHistogram, type ServerTiming, timingBetween } from './server-metrics.js';
import { type Latencies, latencies } from './stats.js';
import { MAX_LISTED_SLOW_TURNS, type SlowTurn, slowestTurns } from './tail.js';
import { newUser, openUser, type Phase, runTurns, type SimUser, type Target, thinkTime } from './user.js';

export interface PhaseResult extends Latencies {
  readonly phase: Phase;
  readonly users: number;
  readonly think_ms: number;
  readonly concurrent: boolean;
  /** Users started evenly over this many ms (the first turn of user i is sent at i x ramp_ms / users). */
  readonly ramp_ms: number;
  /** Turns per second, from the first turn sent to the last answer received. */
  readonly turns_per_s: number;
  readonly wall_ms: number;
  /** Latencies of each user's 1st, 2nd, ... turn: where in the conversation the slow turns are. */
  readonly by_turn: Latencies[];
  readonly errors: number;
  /** The runtime's own timing of the same turns (its Prometheus histogram), when the server exposes it. */
  readonly server: ServerTiming | null;
  /** The demo airline's own time per booking request of the phase, when this run started the airline. */
  readonly airline: Latencies | null;
  /** The whole machine's CPU time during the phase (busy, stolen by the hypervisor); null off Linux. */
  readonly machine: MachineUsage | null;
  /** CPU time of the server, the airline and the load generator during the phase; null off Linux. */
  readonly cpu: PhaseCpu | null;
  /** The turns at or above the p99, slowest first, with the turns that overlapped each. */
  readonly slowest: SlowTurn[];
}

/** A phase's result, its users, and its slowest turns beyond those of its p99 (for pooling runs). */
export interface PhaseRun {
  readonly result: PhaseResult;
  readonly users: SimUser[];
  readonly slowest: readonly SlowTurn[];
  /** The airline's time of each booking request of the phase (ms); null without the airline's timings. */
  readonly airlineMs: readonly number[] | null;
}

export interface PhaseOptions {
  readonly phase: Phase;
  readonly users: number;
  readonly turns: number;
  readonly thinkMs: number;
  readonly concurrent: boolean;
  /** With `concurrent`: start the users evenly over this many ms rather than all in the same instant. */
  readonly rampMs?: number;
  readonly runTag: string;
  /** The server's and the airline's pids, for their CPU time (when this run started them). */
  readonly processes?: RunProcesses;
  /** The demo airline this run started, for its time per booking. */
  readonly airlineUrl?: string;
  readonly onProgress?: (line: string) => void;
}

const PROGRESS_EVERY_MS = 2_000;

export async function runPhase(target: Target, options: PhaseOptions): Promise<PhaseRun> {
  const users = Array.from({ length: options.users }, (_, i) =>
    newUser(options.phase, i, options.runTag, options.turns),
  );
  const say = options.onProgress ?? (() => {});
  if (options.concurrent) await Promise.all(users.map((user) => openUser(target, user)));
  else for (const user of users) await openUser(target, user);
  const expected = options.users * options.turns;
  let done = 0;
  let failed = 0;
  const window: number[] = [];
  const timer = setInterval(() => {
    const recent = latencies(window.splice(0));
    say(
      `[${options.phase}] ${done}/${expected} turns, ${failed} failed, last ${PROGRESS_EVERY_MS / 1000}s p50 ${recent.p50_ms} ms p99 ${recent.p99_ms} ms`,
    );
  }, PROGRESS_EVERY_MS);
  timer.unref();
  const onTurn = (ms: number, ok: boolean) => {
    done++;
    if (!ok) failed++;
    window.push(ms);
  };
  const before = await readHistogram(target.url);
  const startedAt = Date.now();
  const cpuBefore = readCpuTimes();
  const runCpuBefore = readRunCpu(options.processes);
  const steal = new StealSampler().start();
  try {
    if (options.concurrent) {
      const ramp = options.rampMs ?? 0;
      await Promise.all(
        users.map(async (user, i) => {
          if (ramp > 0) await sleep((i * ramp) / users.length);
          await runTurns(target, user, options.thinkMs, onTurn);
        }),
      );
    } else {
      // One user at a time, each pausing before its first turn as before the others: the machine idles
      // between turns as it does under load, so neither phase alone pays for waking it up.
      for (const user of users) {
        if (options.thinkMs > 0) await sleep(thinkTime(options.thinkMs));
        await runTurns(target, user, options.thinkMs, onTurn);
      }
    }
  } finally {
    clearInterval(timer);
    steal.stop();
  }
  const cpuAfter = readCpuTimes();
  const runCpuAfter = readRunCpu(options.processes);
  const after = await readHistogram(target.url);
  const airlineMs =
    options.airlineUrl === undefined
      ? null
      : await readAirlineTimings(options.airlineUrl, startedAt, Date.now());
  const turns = users.flatMap((user) => user.turns);
  const first = Math.min(...turns.map((t) => t.startedAt));
  const last = Math.max(...turns.map((t) => t.endedAt));
  const wall = turns.length === 0 ? 0 : last - first;
  const machine = usageBetween(cpuBefore, cpuAfter);
  const result: PhaseResult = {
    phase: options.phase,
    users: options.users,
    think_ms: options.thinkMs,
    concurrent: options.concurrent,
    ramp_ms: options.concurrent ? (options.rampMs ?? 0) : 0,
    ...latencies(turns.map((t) => t.ms)),
    turns_per_s: wall > 0 ? Math.round((turns.length / wall) * 1000 * 100) / 100 : 0,
    wall_ms: Math.round(wall),
    by_turn: Array.from({ length: options.turns }, (_, i) =>
      latencies(users.flatMap((user) => (user.turns[i] === undefined ? [] : [user.turns[i].ms]))),
    ),
    errors: users.reduce((n, user) => n + user.errors.length, 0),
    server: timingBetween(before, after),
    airline: airlineMs === null ? null : latencies(airlineMs),
    machine,
    cpu:
      cpuBefore === null ? null : phaseCpu(runCpuBefore, runCpuAfter, turns.length, machine?.busy_ms ?? null),
    slowest: slowestTurns(users, undefined, (from, to) => steal.between(from, to)),
  };
  say(
    `[${options.phase}] done: ${turns.length} turns, p50 ${result.p50_ms} ms, p95 ${result.p95_ms} ms, p99 ${result.p99_ms} ms, ${result.turns_per_s} turns/s, ${result.errors} errors`,
  );
  return {
    result,
    users,
    slowest: slowestTurns(users, MAX_LISTED_SLOW_TURNS, (from, to) => steal.between(from, to)),
    airlineMs,
  };
}
