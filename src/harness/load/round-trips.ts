/**
 * The store's round trips per turn: a few users, one at a time and back to back, each reading the server's
 * count of statements sent to its database (`agentstate_store_round_trips_total`, every thread of it)
 * before its first turn and after each, so each turn's count is its own. On PostgreSQL a statement is one
 * round trip (BEGIN and COMMIT included); on SQLite it is one call into the library. Counted after the
 * measured phases: the readings cost the server CPU that no phase counts.
 *
 * Work of the server besides the turn (a sweep on its interval) can land between two readings; the median
 * of each kind of turn leaves such a turn out, the max shows it.
 */
import { median } from './stats.js';
import { newUser, openUser, runTurns, type SimUser, type Target, type TurnKind, turnKind } from './user.js';

const METRIC = 'agentstate_store_round_trips_total';

export interface TurnRoundTrips {
  readonly turns: number;
  readonly median: number;
  readonly min: number;
  readonly max: number;
}

export interface RoundTrips {
  /** The databases the statements went to (`postgres`, `sqlite`), from the metric's labels. */
  readonly adapters: string[];
  readonly users: number;
  /** Turns 1-4 of the booking: route, date, cabin, name. */
  readonly slot_filling: TurnRoundTrips | null;
  /** Turn 5: the confirmation, which books (the airline's call, its action begun and completed). */
  readonly confirming: TurnRoundTrips | null;
}

interface Reading {
  readonly total: number;
  readonly adapters: string[];
}

/** The metric's value summed over its labels; null when the server does not expose it. */
export function parseRoundTrips(text: string): Reading | null {
  let total = 0;
  const adapters: string[] = [];
  let found = false;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${METRIC}{`) && !line.startsWith(`${METRIC} `)) continue;
    found = true;
    total += Number(line.slice(line.lastIndexOf(' ') + 1));
    const adapter = /adapter="([^"]*)"/.exec(line)?.[1];
    if (adapter !== undefined && !adapters.includes(adapter)) adapters.push(adapter);
  }
  return found ? { total, adapters } : null;
}

async function readRoundTrips(url: string): Promise<Reading | null> {
  try {
    const response = await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(10_000) });
    if (!response.ok) return null;
    return parseRoundTrips(await response.text());
  } catch {
    return null;
  }
}

function summary(values: readonly number[]): TurnRoundTrips | null {
  if (values.length === 0) return null;
  return {
    turns: values.length,
    median: median(values),
    min: Math.min(...values),
    max: Math.max(...values),
  };
}

/** Runs `users` users one at a time and counts each turn's statements; null when the server has no count. */
export async function measureRoundTrips(
  target: Target,
  options: { readonly users: number; readonly turns: number; readonly runTag: string },
): Promise<{ roundTrips: RoundTrips | null; users: SimUser[] }> {
  const users = Array.from({ length: options.users }, (_, i) =>
    newUser('round_trips', i, options.runTag, options.turns),
  );
  const byKind: Record<TurnKind, number[]> = { slot_filling: [], confirming: [], after: [] };
  const adapters = new Set<string>();
  let missing = false;
  for (const user of users) {
    if (!(await openUser(target, user))) continue;
    let last: number | null = null;
    let turn = -1;
    await runTurns(target, user, 0, undefined, async () => {
      const reading = await readRoundTrips(target.url);
      if (reading === null) {
        missing = true;
        return;
      }
      for (const adapter of reading.adapters) adapters.add(adapter);
      // A turn that failed is no turn of its kind: its count is left out.
      if (last !== null && turn >= 0 && user.errors.length === 0)
        byKind[turnKind(turn)].push(reading.total - last);
      last = reading.total;
      turn++;
    });
  }
  if (missing) return { roundTrips: null, users };
  return {
    roundTrips: {
      adapters: [...adapters].sort(),
      users: options.users,
      slot_filling: summary(byKind.slot_filling),
      confirming: summary(byKind.confirming),
    },
    users,
  };
}
