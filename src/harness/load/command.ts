/** `agentstate loadtest`: the isolation load harness (SPEC 7) from the command line. */
import type { Command } from 'commander';
import { runLoadTest } from './run.js';

interface LoadCommandOptions {
  readonly url?: string;
  readonly apiKey?: string;
  readonly store?: string;
  readonly users: string;
  readonly workers: string;
  readonly turnThreads: string;
  readonly repeat: string;
  readonly turns: string;
  readonly thinkMs: string;
  readonly rampMs?: string;
  readonly baselineThinkMs?: string;
  readonly backToBack: boolean;
  readonly warmup: string;
  readonly saturation: boolean;
  readonly probeSpread: string;
  readonly roundTripUsers: string;
  readonly report?: string;
  readonly cpuProf?: string;
}

function count(name: string, text: string, min: number): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < min) throw new Error(`loadtest: ${name} must be an integer >= ${min}`);
  return n;
}

/** `--turn-threads`: auto, or a whole number of threads (0: the server's main thread). */
function turnThreadsOf(text: string): number {
  const n = /^\d+$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isInteger(n))
    throw new Error(
      `loadtest: --turn-threads must be auto or a whole number >= 0, got ${JSON.stringify(text)}`,
    );
  return n;
}

export function registerLoadCommands(program: Command): void {
  program
    .command('loadtest')
    .description(
      'isolation under load (SPEC 7): users at once over HTTP, leak check, cross-user probes, p99 ratio',
    )
    .option('--url <url>', 'a running server (default: start one in a child process)')
    .option(
      '--api-key <key>',
      'tenant API key of --url (env AGENTSTATE_API_KEY)',
      process.env.AGENTSTATE_API_KEY,
    )
    .option('--store <url>', 'store of the child server (default: a temporary sqlite: file)')
    .option('--users <n>', 'simulated users', '50')
    .option(
      '--repeat <n>',
      'pairs of baseline and load phases, run alternately and pooled (a p99 of 250 turns alone is their 3rd slowest)',
      '5',
    )
    .option('--workers <n>', 'processes of the server it starts (serve --workers)', '1')
    .option(
      '--turn-threads <n>',
      'threads that run the turns of the server it starts (serve --turn-threads: a number, 0 for its main thread, or auto)',
      'auto',
    )
    .option('--turns <n>', 'turns per user (5 is a whole booking)', '5')
    .option('--think-ms <ms>', 'think time between turns under load (0: saturation only)', '1000')
    .option(
      '--ramp-ms <ms>',
      'under load, start the users evenly over this many ms (default: the think time)',
    )
    .option(
      '--baseline-think-ms <ms>',
      "the baseline's pause between one user's turns, so the machine idles as under load (default: the think time, at most 100; 0: back to back)",
    )
    .option('--no-back-to-back', 'skip the reference baseline with no pause between turns')
    .option('--warmup <n>', 'unmeasured users run first', '3')
    .option('--no-saturation', 'skip the saturation phase (no think time)')
    .option(
      '--probe-spread <n>',
      "other users, from any phase, that probe each user's records (besides every pair of the load phase)",
      '3',
    )
    .option(
      '--round-trip-users <n>',
      "users run one at a time after the phases, the store's round trips counted around each turn (0: none)",
      '3',
    )
    .option('--report <path>', 'write the JSON report here and the Markdown beside it')
    .option('--cpu-prof <dir>', 'profile the child server (node --cpu-prof) into this folder')
    .action(async (options: LoadCommandOptions) => {
      const { report, markdown } = await runLoadTest({
        ...(options.url ? { url: options.url } : {}),
        ...(options.apiKey ? { apiKey: options.apiKey } : {}),
        ...(options.store ? { store: options.store } : {}),
        users: count('--users', options.users, 2),
        workers: count('--workers', options.workers, 1),
        turnThreads: options.turnThreads === 'auto' ? 'auto' : turnThreadsOf(options.turnThreads),
        repeat: count('--repeat', options.repeat, 1),
        turns: count('--turns', options.turns, 1),
        thinkMs: count('--think-ms', options.thinkMs, 0),
        ...(options.rampMs !== undefined ? { rampMs: count('--ramp-ms', options.rampMs, 0) } : {}),
        ...(options.baselineThinkMs !== undefined
          ? { baselineThinkMs: count('--baseline-think-ms', options.baselineThinkMs, 0) }
          : {}),
        backToBack: options.backToBack,
        warmupUsers: count('--warmup', options.warmup, 0),
        saturation: options.saturation,
        probeSpread: count('--probe-spread', options.probeSpread, 0),
        roundTripUsers: count('--round-trip-users', options.roundTripUsers, 0),
        ...(options.report ? { reportPath: options.report } : {}),
        ...(options.cpuProf ? { cpuProfDir: options.cpuProf } : {}),
        onProgress: (line) => process.stderr.write(`${line}\n`),
      });
      process.stdout.write(markdown);
      if (report.leaks > 0 || report.probe_failures > 0 || report.errors > 0) process.exitCode = 1;
    });
}
