/**
 * The server's turn without HTTP: a flight booking's five turns (four slot-filling, one confirming that books
 * through the demo airline) run through `runTurn` as the server runs them (recovery marks on), one user at a
 * time, and the process's CPU time and the SQL statements each turn cost. It measures the deterministic part
 * of the load harness's `cpu.server_ms_per_turn` (the runtime and the store, not the HTTP server), so a
 * change of it shows in a few seconds, and two builds compare side by side in one process.
 */

import type { ModelRegistry } from '../../models/types.js';
import type { AgentRegistry } from '../../runtime/agent.js';
import type { ToolRegistry } from '../../runtime/tool.js';
import type { runTurn } from '../../runtime/turn.js';
import type { Scope, StateStore } from '../../store/types.js';
import { median } from '../checkpoint/repeat.js';
import { type BenchStore, openBenchStore, type StoreOpener } from '../stores.js';

/** One build's runtime: this checkout's or another's (`--before DIR`). */
export interface TurnBuild {
  readonly label: string;
  readonly runTurn: typeof runTurn;
  readonly agents: AgentRegistry;
  readonly models: ModelRegistry;
  readonly tools: ToolRegistry;
  readonly openStore: StoreOpener;
  /** The SQL statements the build's stores have sent so far (its `agentstate_store_round_trips_total`). */
  statements(): number;
}

export interface TurnBenchOptions {
  readonly builds: readonly TurnBuild[];
  readonly stores: readonly string[];
  /** Users (sessions of five turns) measured per build, store and round. */
  readonly users: number;
  /** Users run first in each round and not measured (the code they run is compiled by then). */
  readonly warmUsers: number;
  readonly rounds: number;
  /** The runs' `checkpointDeferMs` and `cancelCheckMs` (each by default the runtime's). */
  readonly timers?: { readonly checkpointDeferMs?: number; readonly cancelCheckMs?: number };
  readonly onProgress?: (text: string) => void;
}

/** A kind of turn's cost in one round: means over the measured users' turns. */
export interface TurnCost {
  readonly turns: number;
  readonly cpu_us_per_turn: number;
  readonly statements_per_turn: number;
}

export interface TurnRound {
  readonly store: string;
  readonly build: string;
  readonly round: number;
  readonly slot_filling: TurnCost;
  readonly confirming: TurnCost;
}

export interface TurnSummary {
  readonly store: string;
  readonly build: string;
  /** Medians over the rounds. */
  readonly slot_filling_cpu_us: number;
  readonly confirming_cpu_us: number;
  readonly slot_filling_statements: number;
  readonly confirming_statements: number;
}

export interface TurnBenchResult {
  readonly rounds: TurnRound[];
  readonly summary: TurnSummary[];
}

/** Route, date, cabin and name (slot filling), then the confirmation that books. */
export function bookingInputs(date: string): readonly string[] {
  return [
    'I want to book a flight from Beijing to Shanghai',
    `on ${date}`,
    'business class please',
    'my name is Ada Lovelace',
    'yes',
  ];
}

const round1 = (value: number) => Math.round(value * 10) / 10;

interface Tally {
  cpu: number;
  statements: number;
  turns: number;
}

const cost = (tally: Tally): TurnCost => ({
  turns: tally.turns,
  cpu_us_per_turn: tally.turns === 0 ? 0 : Math.round(tally.cpu / tally.turns),
  statements_per_turn: tally.turns === 0 ? 0 : round1(tally.statements / tally.turns),
});

/** One booking's five turns on `store`; what each cost is added to the tallies once warm. */
async function book(
  build: TurnBuild,
  store: StateStore,
  scope: Scope,
  inputs: readonly string[],
  tallies: { slot: Tally; confirm: Tally } | null,
  timers: TurnBenchOptions['timers'],
): Promise<void> {
  const session = await store.createSession(scope, { agent: 'flight_booking', context: { language: 'en' } });
  for (const [index, input] of inputs.entries()) {
    const statements = build.statements();
    const started = process.cpuUsage();
    const answer = await build.runTurn({
      store,
      scope,
      sessionId: session.id,
      agents: build.agents,
      models: build.models,
      tools: build.tools,
      recovery: { instanceId: 'bench-turn', incarnation: build.label },
      ...timers,
      input,
    });
    const spent = process.cpuUsage(started);
    const confirming = index === inputs.length - 1;
    if (confirming && answer.actions.length !== 1)
      throw new Error(`bench:turn: the confirming turn of ${build.label} booked nothing: ${answer.reply}`);
    if (tallies === null) continue;
    const tally = confirming ? tallies.confirm : tallies.slot;
    tally.cpu += spent.user + spent.system;
    tally.statements += build.statements() - statements;
    tally.turns++;
  }
}

/**
 * Every build on a fresh store of its own of one kind: bookings alternate between the builds (the first
 * build's first in odd rounds, the other's in even ones), so whatever drifts during the round (the code
 * compiled, the heap, the machine) drifts for all of them alike.
 */
async function runRound(store: string, round: number, options: TurnBenchOptions): Promise<TurnRound[]> {
  const date = new Date(Date.now() + 120 * 86_400_000).toISOString().slice(0, 10);
  const inputs = bookingInputs(date);
  const builds = round % 2 === 1 ? options.builds : [...options.builds].reverse();
  const opened: { build: TurnBuild; bench: BenchStore; slot: Tally; confirm: Tally }[] = [];
  try {
    for (const build of builds) {
      const bench = await openBenchStore(store, `turn_${build.label}`, build.openStore);
      opened.push({
        build,
        bench,
        slot: { cpu: 0, statements: 0, turns: 0 },
        confirm: { cpu: 0, statements: 0, turns: 0 },
      });
    }
    for (let user = 0; user < options.warmUsers + options.users; user++) {
      const scope: Scope = { tenant_id: `bench-turn-${round}`, user_id: `user-${user}` };
      for (const entry of user % 2 === 0 ? opened : [...opened].reverse()) {
        const tallies = user < options.warmUsers ? null : entry;
        await book(entry.build, entry.bench.store, scope, inputs, tallies, options.timers);
      }
    }
  } finally {
    for (const entry of opened) await entry.bench.done();
  }
  return opened.map((entry) => ({
    store,
    build: entry.build.label,
    round,
    slot_filling: cost(entry.slot),
    confirming: cost(entry.confirm),
  }));
}

/** Every build on every store, round after round. */
export async function runTurnBench(options: TurnBenchOptions): Promise<TurnBenchResult> {
  const say = options.onProgress ?? (() => {});
  const rounds: TurnRound[] = [];
  for (let round = 1; round <= options.rounds; round++) {
    for (const store of options.stores) {
      for (const result of await runRound(store, round, options)) {
        rounds.push(result);
        say(
          `round ${round}, ${store}, ${result.build}: slot-filling ${result.slot_filling.cpu_us_per_turn} us ` +
            `(${result.slot_filling.statements_per_turn} statements), confirming ` +
            `${result.confirming.cpu_us_per_turn} us (${result.confirming.statements_per_turn})`,
        );
      }
    }
  }
  const summary: TurnSummary[] = [];
  for (const store of options.stores) {
    for (const build of options.builds) {
      const mine = rounds.filter((r) => r.store === store && r.build === build.label);
      summary.push({
        store,
        build: build.label,
        slot_filling_cpu_us: Math.round(median(mine.map((r) => r.slot_filling.cpu_us_per_turn))),
        confirming_cpu_us: Math.round(median(mine.map((r) => r.confirming.cpu_us_per_turn))),
        slot_filling_statements: median(mine.map((r) => r.slot_filling.statements_per_turn)),
        confirming_statements: median(mine.map((r) => r.confirming.statements_per_turn)),
      });
    }
  }
  return { rounds, summary };
}

/** The summary as a table; with two builds, each round's CPU ratio (first build over second) too. */
export function turnBenchMarkdown(result: TurnBenchResult, builds: readonly string[]): string {
  const lines = [
    '| store | build | slot-filling turn: CPU us (rounds) | statements | confirming turn: CPU us (rounds) | statements |',
    '| --- | --- | --- | --- | --- | --- |',
  ];
  for (const row of result.summary) {
    const mine = result.rounds.filter((r) => r.store === row.store && r.build === row.build);
    const slot = mine.map((r) => r.slot_filling.cpu_us_per_turn).join(', ');
    const confirm = mine.map((r) => r.confirming.cpu_us_per_turn).join(', ');
    lines.push(
      `| ${row.store} | ${row.build} | ${row.slot_filling_cpu_us} (${slot}) | ${row.slot_filling_statements} | ` +
        `${row.confirming_cpu_us} (${confirm}) | ${row.confirming_statements} |`,
    );
  }
  const [first, second] = builds;
  if (first !== undefined && second !== undefined) {
    lines.push(
      '',
      `| store | CPU ${first} / ${second}: slot-filling (rounds) | confirming (rounds) |`,
      '| --- | --- | --- |',
    );
    for (const store of new Set(result.rounds.map((r) => r.store))) {
      const ratios = (kind: 'slot_filling' | 'confirming') => {
        const a = result.rounds.filter((r) => r.store === store && r.build === first);
        const b = result.rounds.filter((r) => r.store === store && r.build === second);
        const each = a.map((r, i) => r[kind].cpu_us_per_turn / (b[i]?.[kind].cpu_us_per_turn ?? Number.NaN));
        return `${median(each).toFixed(2)} (${each.map((x) => x.toFixed(2)).join(', ')})`;
      };
      lines.push(`| ${store} | ${ratios('slot_filling')} | ${ratios('confirming')} |`);
    }
  }
  return lines.join('\n');
}
