/**
 * The isolation load harness end to end, small: 5 users x 5 turns at once over real HTTP against a real
 * `agentstate serve` child process, on SQLite and on PostgreSQL. Asserts isolation and correctness only
 * (0 leaks, every probe 404, 0 errors, every booking done), never latency.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildProgram } from '../../src/cli/program.js';
import { type LoadReport, registerLoadCommands, runLoadTest } from '../../src/harness/load/index.js';
import { dropSchema, randomSchema, schemaUrl } from '../store/postgres-env.js';

const dir = mkdtempSync(join(tmpdir(), 'load-test-'));
const schema = randomSchema();
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await dropSchema(schema);
});

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function expectIsolated(report: LoadReport): void {
  expect(report.error_samples).toEqual([]);
  expect(report.errors).toBe(0);
  expect(report.leak_samples).toEqual([]);
  expect(report.leaks).toBe(0);
  expect(report.probe_failure_samples).toEqual([]);
  expect(report.probe_failures).toBe(0);
  // 5 users in each of baseline, load and saturation (and back to back when the baseline pauses), each
  // with a whole booking
  const phases = report.back_to_back === null ? 3 : 4;
  expect(report.bookings_expected).toBe(5 * phases);
  expect(report.bookings_completed).toBe(5 * phases);
  // counted where they happen too, when the harness ran the airline: one booking per trip, no request after it
  if (report.booking_effects !== null) {
    expect(report.booking_effects).toMatchObject({ duplicate_effects: 0, redundant_calls: 0 });
    expect(report.booking_effects.effects).toBeGreaterThanOrEqual(5 * phases);
  }
  // each of 5 users probes 4 others: session, messages, context, task list, and each task and its events
  expect(report.probes).toBeGreaterThanOrEqual(5 * 4 * 6);
  // every turn carried a marker, kept in its writer's messages; users of every phase had their records probed
  expect(report.leak_check.markers_planted).toBeGreaterThanOrEqual(5 * 5 * phases);
  expect(report.leak_check.markers_stored).toBe(report.leak_check.markers_planted);
  for (const phase of ['baseline', 'load', 'saturation'])
    expect(report.probe_phases[phase]?.failures).toBe(0);
  // the store's statements per turn, counted around each turn of users run one at a time after the phases
  expect(report.round_trips?.slot_filling?.turns).toBe(3 * 4);
  expect(report.round_trips?.slot_filling?.median).toBeGreaterThan(0);
  expect(report.round_trips?.confirming?.median).toBeGreaterThan(
    report.round_trips?.slot_filling?.median ?? 0,
  );
  for (const phase of [report.baseline, report.load]) {
    expect(phase.count).toBe(25);
    expect(phase.p50_ms).toBeGreaterThan(0);
    expect(phase.p99_ms).toBeGreaterThanOrEqual(phase.p95_ms);
    expect(phase.p95_ms).toBeGreaterThanOrEqual(phase.p50_ms);
  }
  expect(report.baseline.concurrent).toBe(false);
  expect(report.load.concurrent).toBe(true);
  expect(report.saturation?.count).toBe(25);
  expect(report.throughput).toBeGreaterThan(0);
  expect(report.p99_ratio).toBeGreaterThan(0);
  expect(report.load.server?.turns).toBe(25);
  // the airline this run started timed its own part of each booking: one request per user and phase
  for (const phase of [report.baseline, report.load]) {
    expect(phase.airline?.count).toBe(5);
    expect(phase.airline?.p50_ms).toBeGreaterThan(0);
    // a booking turn waits for the airline's answer, and more
    expect(phase.airline?.max_ms).toBeLessThan(phase.max_ms);
  }
  // 25 turns: the p99 rests on the slowest one, listed with the turns that overlapped it
  expect(report.load.slowest).toHaveLength(1);
  expect(report.load.slowest[0]?.ms).toBe(report.load.p99_ms);
  expect(report.baseline.slowest[0]?.overlapping).toBe(0);
  if (process.platform === 'linux') {
    expect(report.load.machine?.total_ms).toBeGreaterThan(0);
    expect(report.load.machine?.cpu_busy_pct).toBeGreaterThan(0);
    // the server this run started, the airline and this process each used some CPU, counted apart
    const cpu = report.load.cpu;
    expect(cpu?.server_ms).toBeGreaterThan(0);
    expect(cpu?.server_ms_per_turn).toBe(Math.round(((cpu?.server_ms ?? 0) / 25) * 100) / 100);
    expect(cpu?.airline_ms).toBeGreaterThanOrEqual(0);
    expect(cpu?.generator_ms).toBeGreaterThan(0);
    expect(cpu?.rest_ms).toBeGreaterThanOrEqual(0);
    expect(
      (cpu?.server_ms ?? 0) + (cpu?.airline_ms ?? 0) + (cpu?.generator_ms ?? 0) + (cpu?.rest_ms ?? 0),
    ).toBeGreaterThanOrEqual(report.load.machine?.busy_ms ?? 0);
  }
}

describe('loadtest', { timeout: 120_000 }, () => {
  it('SQLite: 5 users x 5 turns at once, no leak, every probe 404, reports written', async () => {
    const lines: string[] = [];
    const reportPath = join(dir, 'reports/load.json');
    let pid = -1;
    const { report, markdown, users } = await runLoadTest({
      store: `sqlite:${join(dir, 'load.db')}`,
      users: 5,
      turns: 5,
      thinkMs: 50,
      warmupUsers: 1,
      reportPath,
      onProgress: (line) => {
        lines.push(line);
        pid = Number(/child pid (\d+)/.exec(line)?.[1] ?? pid);
      },
    });
    expectIsolated(report);
    // users of every phase had their own session, and distinct values
    const measured = users.filter((u) => u.phase !== 'warmup' && u.phase !== 'round_trips');
    expect(new Set(measured.map((u) => u.sessionId)).size).toBe(20);
    expect(new Set(measured.map((u) => u.passengerName)).size).toBe(20);
    expect(report.requests).toBeGreaterThan(report.probes + 4 * 25);
    // the baseline pauses before each turn (the think time, at most 100 ms, ±20%): 25 pauses of >= 40 ms
    expect(report.baseline_think_ms).toBe(50);
    expect(report.baseline.think_ms).toBe(50);
    expect(report.baseline.wall_ms).toBeGreaterThanOrEqual(24 * 40);
    // and runs once more back to back, for comparison
    expect(report.back_to_back).toMatchObject({ count: 25, think_ms: 0, concurrent: false });
    expect(markdown).toContain('| baseline, back to back | 5, one at a time, think 0 ms | 25 |');
    const written = JSON.parse(readFileSync(reportPath, 'utf8')) as LoadReport;
    expect(written).toMatchObject({ users: 5, turns: 5, leaks: 0, probe_failures: 0, errors: 0 });
    expect(Object.keys(written)).toEqual(
      expect.arrayContaining(['requests', 'baseline', 'load', 'p99_ratio', 'throughput']),
    );
    expect(readFileSync(join(dir, 'reports/load.md'), 'utf8')).toBe(markdown);
    expect(markdown).toContain('| 0 leaks');
    expect(markdown).toContain('The turns at or above the p99');
    expect(markdown).toMatch(/\| load \| 5 \| [\d.]+ \| [\d.]+ \| [\d.]+ \| [\d.]+ \|/);
    if (process.platform === 'linux')
      expect(markdown).toMatch(/\| load \| [\d.]+% \| [\d.]+% \| \d+ \| [\d.]+ \| \d+ \|/);
    expect(lines.some((l) => l.startsWith('[load] done: 25 turns'))).toBe(true);
    expect(lines.some((l) => l.startsWith('[probes]'))).toBe(true);
    expect(pid).toBeGreaterThan(0);
    expect(pidAlive(pid)).toBe(false);
  });

  it('PostgreSQL: the same on a fresh schema', async () => {
    const { report } = await runLoadTest({
      store: schemaUrl(schema),
      users: 5,
      turns: 5,
      thinkMs: 50,
      warmupUsers: 0,
    });
    expectIsolated(report);
  });

  it('`agentstate loadtest` runs from commander and writes its report', async () => {
    const reportPath = join(dir, 'cli/load.json');
    const program = buildProgram([registerLoadCommands]).exitOverride();
    const argv = [
      ...['--users', '2', '--turns', '2', '--think-ms', '0', '--warmup', '0', '--repeat', '2'],
      ...['--report', reportPath],
    ];
    // from the command line, five pairs are pooled unless told otherwise: a p99 of 250 turns is their 3rd slowest
    const loadtest = program.commands.find((command) => command.name() === 'loadtest');
    expect(loadtest?.options.find((option) => option.long === '--repeat')?.defaultValue).toBe('5');
    await program.parseAsync(['node', 'agentstate', 'loadtest', ...argv]);
    const report = JSON.parse(readFileSync(reportPath, 'utf8')) as LoadReport;
    expect(report).toMatchObject({ users: 2, turns: 2, think_ms: 0, leaks: 0, probe_failures: 0, errors: 0 });
    // two pairs of baseline and load: their samples pooled, each pair's own ratio kept
    expect(report.repeat).toBe(2);
    // with no think time the baseline has no pause either, and there is no back-to-back run to add
    expect(report.baseline_think_ms).toBe(0);
    expect(report.back_to_back).toBeNull();
    expect(report.pairs).toHaveLength(2);
    const [one, two] = report.pairs.map((p) => p.p99_ratio) as [number, number];
    expect(report.median_pair_ratio).toBe(Math.round(((one + two) / 2) * 100) / 100);
    expect(report.baseline.count).toBe(8);
    expect(report.load.count).toBe(8);
    expect(report.load.by_turn.map((t) => t.count)).toEqual([4, 4]);
    // with no think time the load phase is the saturation phase
    expect(report.saturation).toEqual(report.load);
    expect(report.throughput).toBe(report.load.turns_per_s);
    expect(process.exitCode ?? 0).toBe(0);
    await expect(
      buildProgram([registerLoadCommands])
        .exitOverride()
        .parseAsync(['node', 'agentstate', 'loadtest', '--users', 'many']),
    ).rejects.toThrow('--users must be an integer');
  });

  it('refuses bad options before starting anything', async () => {
    await expect(runLoadTest({ users: 1 })).rejects.toThrow('--users');
    await expect(runLoadTest({ turns: 0 })).rejects.toThrow('--turns');
    await expect(runLoadTest({ repeat: 0 })).rejects.toThrow('--repeat');
    await expect(runLoadTest({ baselineThinkMs: -1 })).rejects.toThrow('--baseline-think-ms');
    await expect(runLoadTest({ url: 'http://127.0.0.1:1' })).rejects.toThrow('--api-key');
    expect(existsSync(dir)).toBe(true);
  });

  it('a server that fails to start ends the run with its error and leaves no child behind', async () => {
    const before = new Set(childPids());
    // A file where the store's folder would be: the server cannot open its database and exits.
    const blocker = join(dir, 'not-a-dir');
    writeFileSync(blocker, 'x');
    await expect(
      runLoadTest({ store: `sqlite:${join(blocker, 'load.db')}`, warmupUsers: 0 }),
    ).rejects.toThrow('the server exited');
    const left = childPids().filter((pid) => !before.has(pid) && pidAlive(pid));
    expect(left).toEqual([]);
  });
});

/** This process's child processes (from /proc). */
function childPids(): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === process.pid) out.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}
