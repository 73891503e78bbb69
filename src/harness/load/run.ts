/**
 * The isolation load test (SPEC 7): warm-up, a baseline of users one at a time, all users at once with a
 * think time, all users at once with none (saturation), then every user reads back its own records, users
 * of every phase probe other users' records, and the leak check searches every answer. Starts its own server and the demo airline it books with in child processes unless given a URL.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { AIRLINE_EFFECTS_FILE } from '../../demo/airline/ledger-book.js';
import { readEffectLog, tallyEffects } from '../../demo/effects.js';
import { makeFolder } from '../../process/folders.js';
import { startAirlineChild } from './airline-child.js';
import { leaksByKind, scanLeaks } from './leaks.js';
import { type PhaseResult, runPhase } from './phase.js';
import { pooledPhase } from './pool.js';
import { probeAll } from './probes.js';
import { newestProfile, summarizeProfile } from './profile.js';
import { readBackAll } from './readback.js';
import type { LoadReport } from './report.js';
import { toMarkdown } from './report.js';
import { measureRoundTrips, type RoundTrips } from './round-trips.js';
import { startServerChild } from './server-child.js';
import { median } from './stats.js';
import type { Phase, SimUser, Target } from './user.js';

export interface LoadTestOptions {
  /** A running server; when absent, one is started in a child process on `store`. */
  readonly url?: string;
  /** Tenant API key for `url` (mints the user tokens). Required with `url`. */
  readonly apiKey?: string;
  /** Store of the child server. Default: a `sqlite:` file in a temporary folder. */
  readonly store?: string;
  /** Server processes of the child server (`serve --workers`). Default 1. */
  readonly workers?: number;
  /** Threads that run the child server's turns (`serve --turn-threads`). Default `auto`, as `serve`'s. */
  readonly turnThreads?: number | 'auto';
  /** Default 50. */
  readonly users?: number;
  /** Turns per user. Default 5 (a whole booking). */
  readonly turns?: number;
  /** Pause between a user's turns under load, ±20% jitter. Default 1000; 0 makes the load phase saturation. */
  readonly thinkMs?: number;
  /**
   * Under load, users start evenly over this many ms, as people arriving do (a k6 ramp), so the first turns
   * are not one burst of every user in the same millisecond. Default: the think time. 0: all at once.
   */
  readonly rampMs?: number;
  /**
   * Pause between the turns of the baseline's one user at a time (and before its first turn), ±20% jitter.
   * Default: the think time, at most 100 ms. A machine left idle between requests pays to wake up on each of
   * them (here about 0.6 ms per HTTP round trip between two processes); a user who thinks does, under load
   * or alone. A baseline with no pause keeps the machine awake and would compare with load a latency no
   * single user sees. 0 gives that back-to-back baseline.
   */
  readonly baselineThinkMs?: number;
  /**
   * Also runs the baseline once with no pause (users one at a time, back to back) and reports it as
   * `back_to_back`, beside the baseline the ratio uses. Default true.
   */
  readonly backToBack?: boolean;
  /**
   * Runs of the baseline and the load phase, alternately (baseline, load, baseline, load, ...). Their samples
   * are pooled for the percentiles and the ratio; each pair's own figures are kept in `pairs`. Default 1.
   */
  readonly repeat?: number;
  /** Users run (unmeasured) before the baseline so that neither phase pays for a cold server. Default 3. */
  readonly warmupUsers?: number;
  /** Run the saturation phase (no think time) too. Default true. */
  readonly saturation?: boolean;
  /**
   * Users run one at a time after the measured phases, reading the server's count of store round trips
   * around each turn (round-trips.ts). Default 3; 0 skips it.
   */
  readonly roundTripUsers?: number;
  /** Requests in flight while probing (and reading back). Default 16. */
  readonly probeConcurrency?: number;
  /**
   * Besides every pair of the (first) load phase's users, each user of every phase has its records probed by
   * this many other users, spread over the whole run (other phases included). Default 3.
   */
  readonly probeSpread?: number;
  /** Writes the JSON here and the Markdown beside it (`.md`). */
  readonly reportPath?: string;
  /** Runs the child server with `--cpu-prof` into this folder and adds its hottest functions to the report. */
  readonly cpuProfDir?: string;
  /** Child server log level. Default `warn`. */
  readonly serverLogLevel?: string;
  readonly onProgress?: (line: string) => void;
}

export interface LoadTestResult {
  readonly report: LoadReport;
  readonly markdown: string;
  readonly users: readonly SimUser[];
}

const SAMPLES = 10;
/** Other users that probe each user's records, besides every pair of the load phase. */
export const DEFAULT_PROBE_SPREAD = 3;
/** The baseline's pause between turns when none is given (at most the think time). */
export const DEFAULT_BASELINE_THINK_MS = 100;

export async function runLoadTest(options: LoadTestOptions = {}): Promise<LoadTestResult> {
  const users = options.users ?? 50;
  const turns = options.turns ?? 5;
  const thinkMs = options.thinkMs ?? 1000;
  if (!Number.isInteger(users) || users < 2) throw new Error('loadtest: --users must be an integer >= 2');
  if (!Number.isInteger(turns) || turns < 1) throw new Error('loadtest: --turns must be an integer >= 1');
  if (!Number.isFinite(thinkMs) || thinkMs < 0) throw new Error('loadtest: --think-ms must be >= 0');
  const baselineThinkMs = options.baselineThinkMs ?? Math.min(thinkMs, DEFAULT_BASELINE_THINK_MS);
  if (!Number.isFinite(baselineThinkMs) || baselineThinkMs < 0)
    throw new Error('loadtest: --baseline-think-ms must be >= 0');
  const rampMs = options.rampMs ?? thinkMs;
  if (!Number.isFinite(rampMs) || rampMs < 0) throw new Error('loadtest: --ramp-ms must be >= 0');
  const repeat = options.repeat ?? 1;
  const roundTripUsers = options.roundTripUsers ?? 3;
  if (!Number.isInteger(roundTripUsers) || roundTripUsers < 0)
    throw new Error('loadtest: --round-trip-users must be an integer >= 0');
  if (!Number.isInteger(repeat) || repeat < 1) throw new Error('loadtest: --repeat must be an integer >= 1');
  if (options.url !== undefined && !options.apiKey) throw new Error('loadtest: --url needs --api-key');
  const say = options.onProgress ?? (() => {});
  if (options.cpuProfDir) makeFolder(options.cpuProfDir, 'for the CPU profiles');
  // A report path that cannot be written fails now, not after the whole run (and before the temp folder).
  if (options.reportPath) makeFolder(dirname(options.reportPath), 'for the report');
  const temp = mkdtempSync(join(tmpdir(), 'agentstate-loadtest-'));
  const store = options.store ?? `sqlite:${join(temp, 'load.db')}`;
  let airline: Awaited<ReturnType<typeof startAirlineChild>> | null = null;
  try {
    airline = options.url === undefined ? await startAirlineChild(join(temp, 'airline')) : null;
  } catch (error) {
    rmSync(temp, { recursive: true, force: true });
    throw error;
  }
  const startChild = () =>
    startServerChild({
      storeUrl: store,
      dataDir: join(temp, 'data'),
      ...(airline ? { airlineUrl: airline.url } : {}),
      workers: options.workers ?? 1,
      turnThreads: options.turnThreads ?? 'auto',
      ...(options.serverLogLevel ? { logLevel: options.serverLogLevel } : {}),
      ...(options.cpuProfDir ? { nodeFlags: ['--cpu-prof', `--cpu-prof-dir=${options.cpuProfDir}`] } : {}),
    });
  let child: Awaited<ReturnType<typeof startServerChild>> | null = null;
  try {
    child = options.url === undefined ? await startChild() : null;
  } catch (error) {
    // The airline child would keep this process alive (and waiting) after a server that failed to start.
    await airline?.close();
    rmSync(temp, { recursive: true, force: true });
    throw error;
  }
  const target: Target = child ?? { url: options.url as string, apiKey: options.apiKey as string };
  const runTag = randomBytes(3).toString('hex');
  const phase = (name: Phase, n: number, think: number, at: boolean, ramp = 0) =>
    runPhase(target, {
      phase: name,
      users: n,
      turns,
      thinkMs: think,
      concurrent: at,
      rampMs: ramp,
      runTag,
      processes: { server: child?.pid ?? null, airline: airline?.pid ?? null },
      ...(airline ? { airlineUrl: airline.url } : {}),
      onProgress: say,
    });
  try {
    const started_at = new Date().toISOString();
    const loadStart = loadavg()[0] ?? 0;
    say(`loadtest: server ${target.url} (${child ? `child pid ${child.pid}, store ${store}` : 'external'})`);
    const all: SimUser[] = [];
    const warmupUsers = options.warmupUsers ?? 3;
    if (warmupUsers > 0) all.push(...(await phase('warmup', warmupUsers, 0, false)).users);
    let backToBack: PhaseResult | null = null;
    if (baselineThinkMs > 0 && options.backToBack !== false) {
      const run = await phase('back_to_back', users, 0, false);
      all.push(...run.users);
      backToBack = run.result;
    }
    const baselineRuns: Awaited<ReturnType<typeof phase>>[] = [];
    const loadRuns: Awaited<ReturnType<typeof phase>>[] = [];
    for (let k = 0; k < repeat; k++) {
      if (repeat > 1) say(`[pair ${k + 1}/${repeat}]`);
      const b = await phase('baseline', users, baselineThinkMs, false);
      baselineRuns.push(b);
      all.push(...b.users);
      const l = await phase('load', users, thinkMs, true, thinkMs > 0 ? rampMs : 0);
      loadRuns.push(l);
      all.push(...l.users);
    }
    const baseline = { result: pooledPhase(baselineRuns) };
    const load = { result: pooledPhase(loadRuns), users: loadRuns[0]?.users ?? [] };
    const pairs = baselineRuns.map((b, k) => {
      const l = loadRuns[k]?.result.p99_ms ?? 0;
      return {
        baseline_p99_ms: b.result.p99_ms,
        load_p99_ms: l,
        p99_ratio: b.result.p99_ms > 0 ? Math.round((l / b.result.p99_ms) * 100) / 100 : 0,
      };
    });
    let saturation: PhaseResult | null = thinkMs === 0 ? load.result : null;
    if (thinkMs > 0 && options.saturation !== false) {
      const run = await phase('saturation', users, 0, true);
      all.push(...run.users);
      saturation = run.result;
    }
    let roundTrips: RoundTrips | null = null;
    if (roundTripUsers > 0) {
      say(
        `[round trips] ${roundTripUsers} users one at a time, the store's statements counted around each turn`,
      );
      const run = await measureRoundTrips(target, { users: roundTripUsers, turns, runTag });
      all.push(...run.users);
      roundTrips = run.roundTrips;
    }
    const concurrency = options.probeConcurrency ?? 16;
    say('[read back] every user reads its own messages, context and memory');
    const readBack = await readBackAll(target, all, concurrency);
    const spread = options.probeSpread ?? DEFAULT_PROBE_SPREAD;
    say(
      `[probes] every user of the (first) load phase asks for the other ${users - 1} users' records, and ${spread} others for each user of every phase`,
    );
    const plan = { everyPair: load.users, everyone: all, spread };
    const probes = await probeAll(target, plan, concurrency, (done, total) =>
      say(`[probes] ${done}/${total}`),
    );
    say("[leaks] checking every answer for another user's values");
    const scan = scanLeaks(all, probes.exchanges);
    const leaks = scan.leaks;
    const errorList = all.flatMap((user) => user.errors.map((e) => `${user.userId}: ${e}`));
    // The round-trip users book too, outside the measured phases (their bookings count with the warm-up's).
    const unmeasured = (u: SimUser) => u.phase === 'warmup' || u.phase === 'round_trips';
    const measured = all.filter((u) => !unmeasured(u));
    const bookingsExpected = turns >= 5 ? measured.length : 0;
    const bookings = measured.filter((u) => u.booked).length;
    if (bookings < bookingsExpected)
      errorList.push(`${bookingsExpected - bookings} booking(s) did not complete`);
    // Exactly once, counted where the bookings happen: the airline's effect log, not the users' answers.
    const effectLog = airline === null ? null : readEffectLog(join(temp, 'airline', AIRLINE_EFFECTS_FILE));
    if (airline !== null && effectLog === null && bookingsExpected > 0)
      errorList.push("the airline's effect log is missing: its bookings cannot be counted");
    const bookingEffects = airline === null ? null : tallyEffects(effectLog ?? []);
    if (bookingEffects !== null) {
      if (bookingEffects.duplicate_effects > 0)
        errorList.push(`the airline booked ${bookingEffects.duplicate_effects} trip(s) more than once`);
      if (bookingEffects.redundant_calls > 0)
        errorList.push(
          `${bookingEffects.redundant_calls} booking request(s) came after the booking was made`,
        );
      if (bookingEffects.effects !== bookings + all.filter((u) => unmeasured(u) && u.booked).length)
        errorList.push(
          `the airline made ${bookingEffects.effects} bookings, the users saw ${bookings} (and warm-ups, round-trip users)`,
        );
    }
    // A marker the server did not keep could not have leaked: the check would be blind to it.
    if (readBack.stored < readBack.planted)
      errorList.push(
        `${readBack.planted - readBack.stored} of ${readBack.planted} planted markers not found in their writers' own messages`,
      );
    const requests = all.reduce((n, u) => n + u.exchanges.length, 0) + probes.exchanges.length;
    const p99Ratio =
      baseline.result.p99_ms > 0 ? Math.round((load.result.p99_ms / baseline.result.p99_ms) * 100) / 100 : 0;
    await child?.close();
    const profFile = options.cpuProfDir ? newestProfile(options.cpuProfDir) : null;
    const report: LoadReport = {
      started_at,
      store: child ? store : 'external',
      server: child ? 'child process' : 'external',
      airline: child ? 'child process' : 'external',
      workers: child ? (options.workers ?? 1) : null,
      turn_threads: child ? child.turnThreads : null,
      users,
      turns,
      think_ms: thinkMs,
      baseline_think_ms: baselineThinkMs,
      ramp_ms: thinkMs > 0 ? rampMs : 0,
      machine: {
        cpus: availableParallelism(),
        loadavg_start: Math.round(loadStart * 100) / 100,
        loadavg_end: Math.round((loadavg()[0] ?? 0) * 100) / 100,
      },
      requests,
      errors: errorList.length,
      error_samples: errorList.slice(0, SAMPLES),
      bookings_completed: bookings,
      bookings_expected: bookingsExpected,
      booking_effects:
        bookingEffects === null
          ? null
          : {
              calls: bookingEffects.calls,
              effects: bookingEffects.effects,
              duplicate_effects: bookingEffects.duplicate_effects,
              redundant_calls: bookingEffects.redundant_calls,
            },
      leaks: leaks.length,
      leak_samples: leaks.slice(0, SAMPLES),
      leaks_by_kind: leaksByKind(leaks),
      leak_check: {
        answers: scan.answers,
        values: scan.values,
        markers_planted: readBack.planted,
        markers_stored: readBack.stored,
      },
      probes: probes.probes,
      probe_failures: probes.failures.length,
      probe_failure_samples: probes.failures.slice(0, SAMPLES),
      probe_spread: spread,
      probe_routes: probes.routes,
      probe_phases: probes.phases,
      baseline: baseline.result,
      back_to_back: backToBack,
      load: load.result,
      p99_ratio: p99Ratio,
      repeat,
      pairs,
      median_pair_ratio: median(pairs.map((pair) => pair.p99_ratio)),
      saturation,
      throughput: saturation?.turns_per_s ?? null,
      round_trips: roundTrips,
      profile: profFile ? summarizeProfile(profFile) : null,
      goals: {
        no_leaks: leaks.length === 0,
        probes_404: probes.failures.length === 0,
        p99_ratio_le_1_2: p99Ratio <= 1.2,
      },
    };
    const markdown = toMarkdown(report);
    if (options.reportPath) {
      makeFolder(dirname(options.reportPath), 'for the report');
      writeFileSync(options.reportPath, `${JSON.stringify(report, null, 2)}\n`);
      writeFileSync(options.reportPath.replace(/(\.json)?$/, '.md'), markdown);
    }
    return { report, markdown, users: all };
  } finally {
    await child?.close();
    await airline?.close();
    rmSync(temp, { recursive: true, force: true });
  }
}
