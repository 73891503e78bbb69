/**
 * Several runs of one phase as one result: the latencies of every turn of every run together (a p99 over
 * 250 x N samples rather than the third-largest of 250), and each run's own p99 kept beside it.
 */
import { sumUsage } from './machine.js';
import type { PhaseResult, PhaseRun } from './phase.js';
import { sumPhaseCpu } from './process-cpu.js';
import { latencies } from './stats.js';
import { pooledSlowest } from './tail.js';

export function pooledPhase(runs: readonly PhaseRun[]): PhaseResult {
  const first = runs[0];
  if (first === undefined) throw new Error('pooledPhase: no runs');
  if (runs.length === 1) return first.result;
  const users = runs.flatMap((run) => run.users);
  const turns = first.result.by_turn.length;
  const wall = runs.reduce((sum, run) => sum + run.result.wall_ms, 0);
  const count = users.reduce((n, user) => n + user.turns.length, 0);
  return {
    ...first.result,
    ...latencies(users.flatMap((user) => user.turns.map((t) => t.ms))),
    turns_per_s: wall > 0 ? Math.round((count / wall) * 1000 * 100) / 100 : 0,
    wall_ms: wall,
    errors: runs.reduce((n, run) => n + run.result.errors, 0),
    // The server's histogram covers one run at a time; several are not one figure.
    server: null,
    airline: runs.every((run) => run.airlineMs !== null)
      ? latencies(runs.flatMap((run) => run.airlineMs ?? []))
      : null,
    machine: sumUsage(runs.map((run) => run.result.machine)),
    cpu: sumPhaseCpu(runs.map((run) => ({ cpu: run.result.cpu, turns: run.result.count }))),
    slowest: pooledSlowest(
      runs.map((run) => run.slowest),
      count,
    ),
    by_turn: Array.from({ length: turns }, (_, i) =>
      latencies(users.flatMap((user) => (user.turns[i] === undefined ? [] : [user.turns[i].ms]))),
    ),
  };
}
