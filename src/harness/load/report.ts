/** The load test's report: JSON for machines, Markdown for people. */
import type { Leak, MarkerKind } from './leaks.js';
import type { PhaseResult } from './phase.js';
import type { ProbeFailure, ProbeTally } from './probes.js';
import type { ProfileEntry } from './profile.js';
import type { RoundTrips, TurnRoundTrips } from './round-trips.js';
import type { Latencies } from './stats.js';

export interface LoadReport {
  readonly started_at: string;
  readonly store: string;
  readonly server: 'child process' | 'external';
  /** Where the demo airline ran: its own process (as an external service would), or the external server's. */
  readonly airline: 'child process' | 'external';
  /** Processes of the child server (`serve --workers`); null for an external server. */
  readonly workers: number | null;
  /** Threads that ran the child server's turns (`serve --turn-threads`; 0: its main thread); null for an external server. */
  readonly turn_threads: number | null;
  readonly users: number;
  readonly turns: number;
  readonly think_ms: number;
  /** The baseline's pause between a user's turns (one user at a time); 0: back to back. */
  readonly baseline_think_ms: number;
  /** The load phase's users started evenly over this many ms (0: all in the same instant). */
  readonly ramp_ms: number;
  /** CPUs and the 1-minute load average when the run started and ended: figures on a busy machine mislead. */
  readonly machine: { readonly cpus: number; readonly loadavg_start: number; readonly loadavg_end: number };
  /** Every HTTP request the harness sent (tokens, sessions, turns, task lists, probes). */
  readonly requests: number;
  readonly errors: number;
  readonly error_samples: string[];
  readonly bookings_completed: number;
  readonly bookings_expected: number;
  /**
   * The airline's effect log, when the harness started the airline: booking requests, bookings made, and
   * per trip (passenger, flight, cabin) bookings beyond the first and requests after it was made (0 and 0).
   */
  readonly booking_effects: {
    readonly calls: number;
    readonly effects: number;
    readonly duplicate_effects: number;
    readonly redundant_calls: number;
  } | null;
  /** Another user's value (id, name, token, text marker) found in an answer, once per answer and value. */
  readonly leaks: number;
  readonly leak_samples: Leak[];
  readonly leaks_by_kind: Record<MarkerKind, number>;
  readonly leak_check: {
    /** Answers searched (turns, task lists, read-backs, probes). */
    readonly answers: number;
    /** Distinct values of all users each answer was searched for. */
    readonly values: number;
    /** Markers planted in the text of the turns, one per turn sent. */
    readonly markers_planted: number;
    /** Of them, those the writer found in its own messages when it read them back. */
    readonly markers_stored: number;
  };
  readonly probes: number;
  readonly probe_failures: number;
  readonly probe_failure_samples: ProbeFailure[];
  /** Other users that probed each user of every phase, besides every pair of the (first) load phase. */
  readonly probe_spread: number;
  /** Probes and failures by route pattern (`GET /v1/actions/:id`). */
  readonly probe_routes: Record<string, ProbeTally>;
  /** Probes and failures by the phase of the user whose records were asked for. */
  readonly probe_phases: Partial<Record<string, ProbeTally>>;
  readonly baseline: PhaseResult;
  /**
   * The baseline once more with no pause between turns (a machine kept awake), when the baseline has one:
   * for comparison, not in the ratio. Null when not run.
   */
  readonly back_to_back: PhaseResult | null;
  readonly load: PhaseResult;
  /** load.p99_ms / baseline.p99_ms (pooled over the pairs when repeated); the goal is <= 1.2. */
  readonly p99_ratio: number;
  /** Pairs of baseline and load phases run, alternately. */
  readonly repeat: number;
  /** Each pair's own p99s and ratio. */
  readonly pairs: readonly { baseline_p99_ms: number; load_p99_ms: number; p99_ratio: number }[];
  /**
   * The median of the pairs' own ratios, beside the pooled one (which the goal uses): one pair that met a
   * pause of the machine can make the pooled p99 by itself.
   */
  readonly median_pair_ratio: number;
  readonly saturation: PhaseResult | null;
  /** Turns per second with no think time, all users at once. */
  readonly throughput: number | null;
  /**
   * Statements the server sent to its store per turn (round trips on PostgreSQL), by kind of turn, counted
   * after the phases with users one at a time (round-trips.ts); null when not counted or not exposed.
   */
  readonly round_trips: RoundTrips | null;
  /** The server's hottest functions by self time, when it ran with a CPU profile. */
  readonly profile: ProfileEntry[] | null;
  readonly goals: {
    readonly no_leaks: boolean;
    readonly probes_404: boolean;
    readonly p99_ratio_le_1_2: boolean;
  };
}

function row(name: string, r: PhaseResult | null): string {
  if (r === null) return `| ${name} | - | - | - | - | - | - | - |`;
  const server = r.server ? `${r.server.mean_ms} / <= ${r.server.p99_le_ms}` : 'n/a';
  const who = r.concurrent
    ? `${r.users} at once${r.ramp_ms > 0 ? ` (started over ${r.ramp_ms} ms)` : ''}`
    : `${r.users}, one at a time`;
  return `| ${name} | ${who}, think ${r.think_ms} ms | ${r.count} | ${r.p50_ms} | ${r.p95_ms} | ${r.p99_ms} | ${r.turns_per_s} | ${server} |`;
}

const mark = (ok: boolean) => (ok ? 'PASS' : 'FAIL');

function leakCheckLines(report: LoadReport): string[] {
  const c = report.leak_check;
  const kinds = Object.entries(report.leaks_by_kind)
    .filter(([, n]) => n > 0)
    .map(([kind, n]) => `${kind} ${n}`);
  const phases = Object.entries(report.probe_phases)
    .filter((entry): entry is [string, ProbeTally] => entry[1] !== undefined)
    .map(([phase, t]) => `${phase} ${t.probes}${t.failures > 0 ? ` (${t.failures} failed)` : ''}`);
  return [
    `Leak check: ${c.answers} answers searched for ${c.values} values of all users (ids, names, tokens, and a marker planted in the text of every turn: ${c.markers_planted} planted, ${c.markers_stored} found in their writers' own messages)${kinds.length > 0 ? `; leaks by kind: ${kinds.join(', ')}` : ''}.`,
    `Probes: every pair of the load phase's users, and ${report.probe_spread} other users for each user of every phase; by the phase of the user asked about: ${phases.join(', ') || 'none'} (routes at the end).`,
  ];
}

function probeRouteLines(report: LoadReport): string[] {
  return [
    '',
    "Cross-user probes by route (another user's id in the path, or its user id in the query):",
    '',
    '| route | probes | failed |',
    '| --- | --- | --- |',
    ...Object.entries(report.probe_routes).map(([route, t]) => `| ${route} | ${t.probes} | ${t.failures} |`),
  ];
}

function roundTripLines(roundTrips: RoundTrips | null): string[] {
  if (roundTrips === null) return [];
  const cell = (t: TurnRoundTrips | null) =>
    t === null ? '-' : `${t.median} (${t.min}-${t.max}, ${t.turns} turns)`;
  return [
    '',
    `Statements sent to the store per turn (${roundTrips.adapters.join(', ') || 'none counted'}; on PostgreSQL each is a round trip), median (min-max), ${roundTrips.users} users one at a time after the phases:`,
    '',
    '| slot-filling turn (1-4) | confirming turn (5) |',
    '| --- | --- |',
    `| ${cell(roundTrips.slot_filling)} | ${cell(roundTrips.confirming)} |`,
  ];
}

export function toMarkdown(report: LoadReport): string {
  const lines = [
    '# Isolation under load',
    '',
    `${report.users} users x ${report.turns} turns of \`flight_booking\` over HTTP, store \`${report.store}\` (server: ${report.server}${report.workers !== null && report.workers > 1 ? ` of ${report.workers} workers` : ''}${report.turn_threads ? `, turns on ${report.turn_threads} threads` : ''}, demo airline: ${report.airline}), started ${report.started_at}.`,
    '',
    `Machine: ${report.machine.cpus} CPUs, load average ${report.machine.loadavg_start} at the start, ${report.machine.loadavg_end} at the end.`,
    '',
    '| goal | result | |',
    '| --- | --- | --- |',
    `| 0 leaks (another user's data in any response) | ${report.leaks} | ${mark(report.goals.no_leaks)} |`,
    `| cross-user probes find nothing (404; 400 for a list filtered by another user; an empty list by their session or task) | ${report.probe_failures} of ${report.probes} failed | ${mark(report.goals.probes_404)} |`,
    `| p99 under load / p99 baseline <= 1.2 | ${report.p99_ratio} | ${mark(report.goals.p99_ratio_le_1_2)} |`,
    '',
    `Requests: ${report.requests}, errors: ${report.errors}, bookings completed: ${report.bookings_completed} of ${report.bookings_expected}.`,
    report.booking_effects === null
      ? "Airline effect log: not read (the airline is not the harness's)."
      : `Airline effect log: ${report.booking_effects.calls} booking requests, ${report.booking_effects.effects} bookings made, ${report.booking_effects.duplicate_effects} duplicate bookings of a trip, ${report.booking_effects.redundant_calls} requests for a booking already made.`,
    '',
    ...leakCheckLines(report),
    '',
    ...(report.repeat > 1
      ? [
          `Baseline and load ran ${report.repeat} times, alternately; the table pools their samples. Each pair's p99 ratio: ${report.pairs.map((p) => p.p99_ratio).join(', ')} (median ${report.median_pair_ratio}).`,
          '',
        ]
      : []),
    '| phase | users | turns | p50 ms | p95 ms | p99 ms | turns/s | server mean / p99 ms (bucket) |',
    '| --- | --- | --- | --- | --- | --- | --- | --- |',
    row('baseline', report.baseline),
    row('load', report.load),
    row('saturation', report.saturation),
    ...(report.back_to_back ? [row('baseline, back to back', report.back_to_back)] : []),
    '',
    'Latency is one turn request, measured by the client from sending to the last byte of the answer.',
    'The baseline runs one user at a time; each user pauses before each of its turns (`--baseline-think-ms`,',
    'default the think time up to 100 ms), so that the machine idles between turns as it does under load.',
    'A machine that idles pays to wake up on every request (here about 0.6 ms per HTTP round trip between',
    'two processes, which a turn that books makes three of); "back to back" is the same baseline with no',
    'pause, shown for comparison and not used in the ratio.',
    'Under load the users start evenly over the ramp (as people arrive, or a k6 ramp) and then keep their',
    'think time (with ±20% jitter) between turns; `--ramp-ms 0` sends every first turn in the same instant.',
    '"server" is the server\'s own handling time of the turn requests (Fastify\'s elapsed time, from its',
    'Prometheus histogram; p99 as the upper bound of its bucket). Client time beyond it was spent before the',
    'server read the request (accept, event-loop queueing) or on the wire; server time beyond the CPU a turn',
    'costs was spent waiting (for the event loop between awaits, a store connection, the store itself).',
  ];
  lines.push(...roundTripLines(report.round_trips));
  const turnRow = (name: string, r: PhaseResult | null) =>
    r === null ? [] : [`| ${name} | ${r.by_turn.map((t) => `${t.p50_ms} / ${t.p99_ms}`).join(' | ')} |`];
  const turnNumbers = report.baseline.by_turn.map((_, i) => `turn ${i + 1}`);
  lines.push(
    '',
    'p50 / p99 ms of each turn of the conversation:',
    '',
    `| phase | ${turnNumbers.join(' | ')} |`,
    `| --- | ${turnNumbers.map(() => '---').join(' | ')} |`,
    ...turnRow('baseline', report.baseline),
    ...turnRow('load', report.load),
    ...turnRow('saturation', report.saturation),
    ...turnRow('back to back', report.back_to_back),
  );
  const phases: [string, PhaseResult | null][] = [
    ['baseline', report.baseline],
    ['load', report.load],
    ['saturation', report.saturation],
    ['back to back', report.back_to_back],
  ];
  const booked = phases.filter(
    (p): p is [string, PhaseResult] => p[1]?.airline != null && p[1].airline.count > 0,
  );
  if (booked.length > 0) {
    lines.push(
      '',
      "The demo airline's own time per booking request, from reading it to sending the answer (its fsync'd",
      'ledger write included; bookings that arrive while a write is on its way wait for it and go in the',
      "next). The booking turns' time beyond it is the server's, the network's and the store's:",
      '',
      '| phase | bookings | p50 ms | p95 ms | p99 ms | max ms |',
      '| --- | --- | --- | --- | --- | --- |',
      ...booked.map(([name, r]) => {
        const a = r.airline as Latencies;
        return `| ${name} | ${a.count} | ${a.p50_ms} | ${a.p95_ms} | ${a.p99_ms} | ${a.max_ms} |`;
      }),
    );
  }
  const measured = phases.filter((p): p is [string, PhaseResult] => p[1]?.machine != null);
  if (measured.length > 0) {
    lines.push(
      '',
      'The machine during each phase (all CPUs together; steal is CPU time the hypervisor took away, which',
      'stops whatever ran on that CPU, so under load it stops several turns in flight at once), and the CPU',
      'time of the server (per turn, and in all), the demo airline, this load generator, and the rest of the',
      "machine (a store's own server such as PostgreSQL, the kernel, anything else), in ms:",
      '',
      '| phase | CPU busy | steal | steal ms | server per turn | server | airline | generator | rest |',
      '| --- | --- | --- | --- | --- | --- | --- | --- | --- |',
      ...measured.map(([name, r]) => {
        const m = r.machine as NonNullable<PhaseResult['machine']>;
        const c = r.cpu;
        const cell = (v: number | null | undefined) => (v === null || v === undefined ? '-' : String(v));
        return `| ${name} | ${m.cpu_busy_pct}% | ${m.steal_pct}% | ${m.steal_ms} | ${cell(c?.server_ms_per_turn)} | ${cell(c?.server_ms)} | ${cell(c?.airline_ms)} | ${cell(c?.generator_ms)} | ${cell(c?.rest_ms)} |`;
      }),
    );
  }
  lines.push(
    '',
    'The turns at or above the p99, slowest first: ms (turn of the conversation, other turns in flight',
    'meanwhile, CPU time the hypervisor took from the machine meanwhile):',
    '',
    ...phases
      .filter((p): p is [string, PhaseResult] => p[1] !== null && p[1].slowest.length > 0)
      .map(
        ([name, r]) =>
          `- ${name}: ${r.slowest.map((t) => `${t.ms} (turn ${t.turn}, ${t.overlapping}${t.steal_ms === null ? '' : `, steal ${t.steal_ms} ms`})`).join(', ')}`,
      ),
  );
  lines.push(...probeRouteLines(report));
  if (report.error_samples.length > 0) {
    lines.push('', '## Errors (first ones)', '', ...report.error_samples.map((e) => `- ${e}`));
  }
  if (report.leak_samples.length > 0) {
    lines.push('', '## Leaks (first ones)', '');
    for (const l of report.leak_samples) {
      lines.push(
        `- ${l.request} (${l.status}) to ${l.receiver} contained ${l.kind} \`${l.value}\` of ${l.owner}`,
      );
    }
  }
  if (report.probe_failure_samples.length > 0) {
    lines.push('', '## Probe failures (first ones)', '');
    for (const f of report.probe_failure_samples)
      lines.push(
        `- ${f.prober}: ${f.request} -> ${f.status} (expected ${f.expected}), records of ${f.owner}`,
      );
  }
  if (report.profile !== null && report.profile.length > 0) {
    lines.push(
      '',
      '## Server CPU profile (self time)',
      '',
      '| function | where | ms | % |',
      '| --- | --- | --- | --- |',
    );
    for (const p of report.profile)
      lines.push(`| ${p.function} | ${p.where} | ${p.self_ms} | ${p.percent} |`);
  }
  return `${lines.join('\n')}\n`;
}
