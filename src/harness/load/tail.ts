/**
 * The turns that make a phase's p99 (those at or above it), each with how many other turns of its run were
 * in flight at some moment while it ran: a slow turn that overlapped many others waited for them, one that
 * overlapped none was slow on its own (or the machine paused).
 */
import { percentileRank } from './stats.js';
import type { SimUser } from './user.js';

export interface SlowTurn {
  readonly ms: number;
  /** Which turn of the user's conversation (1-based). */
  readonly turn: number;
  /** Other turns of the same run whose time overlapped this one's. */
  readonly overlapping: number;
  /**
   * CPU time the hypervisor took from the machine (all CPUs) while the turn ran, to the 10 ms tick; null
   * where it is not measured.
   */
  readonly steal_ms: number | null;
}

/** At most this many are kept: the p99 of a pooled run can rest on more turns than are worth listing. */
export const MAX_LISTED_SLOW_TURNS = 20;

const round = (ms: number) => Math.round(ms * 100) / 100;

/** How many turns are at or above the p99 (nearest rank) of `count` samples. */
export function turnsAtOrAboveP99(count: number): number {
  return count === 0 ? 0 : count - percentileRank(count, 99) + 1;
}

/** The slowest turns of one run, as many as make its p99 (at most MAX_LISTED_SLOW_TURNS). */
export function slowestTurns(
  users: readonly SimUser[],
  keep?: number,
  stealBetween: (from: number, to: number) => number | null = () => null,
): SlowTurn[] {
  const all = users.flatMap((user) => user.turns.map((t, i) => ({ ...t, turn: i + 1 })));
  const n = Math.min(MAX_LISTED_SLOW_TURNS, keep ?? turnsAtOrAboveP99(all.length));
  const slowest = [...all].sort((a, b) => b.ms - a.ms).slice(0, n);
  return slowest.map((s) => ({
    ms: round(s.ms),
    turn: s.turn,
    overlapping: all.filter((o) => o !== s && o.startedAt < s.endedAt && o.endedAt > s.startedAt).length,
    steal_ms: stealBetween(s.startedAt, s.endedAt),
  }));
}

/** The slowest turns of several runs of a phase, pooled as their latencies are. */
export function pooledSlowest(runs: readonly (readonly SlowTurn[])[], totalCount: number): SlowTurn[] {
  const n = Math.min(MAX_LISTED_SLOW_TURNS, turnsAtOrAboveP99(totalCount));
  return runs
    .flat()
    .sort((a, b) => b.ms - a.ms)
    .slice(0, n);
}
