/**
 * The acceptance harnesses of SPEC 7 as commands: `crashtest` (kill -9 at every step, resume, compare) and
 * `bench` (the checkpoint benchmark beside LangGraph.js and the raw drivers).
 */
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';
import { DEFAULT_STORE_URL } from '../../store/open.js';
import { CliError } from '../context.js';
import { print } from '../format.js';

function positiveInteger(name: string, value: string): number {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 1)
    throw new CliError(`${name} must be a positive integer, not ${value}`);
  return parsed;
}

export function registerHarnessCommands(program: Command): void {
  program
    .command('crashtest')
    .description(
      'run deploy_pipeline, SIGKILL it at every step boundary and inside tool calls, resume, compare',
    )
    .option('--store <url>', 'store URL', DEFAULT_STORE_URL)
    .option('--kills <n>', 'number of kills (at least the number of kill points for full coverage)', '20')
    .option(
      '--report <path>',
      'JSON report path (a Markdown summary is written beside it)',
      'reports/crash.json',
    )
    .action(async (options: { store: string; kills: string; report: string }) => {
      const kills = positiveInteger('--kills', options.kills);
      const { runCrashTest } = await import('../../harness/crash/index.js');
      const result = await runCrashTest({
        storeUrl: options.store,
        kills,
        reportPath: options.report,
        onProgress: (line) => process.stderr.write(`${line}\n`),
      });
      print(result.markdown);
      const { report } = result;
      if (report.recovered !== report.runs || report.identical_output !== report.runs) process.exitCode = 1;
      if (report.duplicate_side_effects !== 0) process.exitCode = 1;
    });

  program
    .command('bench')
    .description(
      'checkpoint benchmark: agentstate stores vs LangGraph.js savers vs raw drivers (needs dev dependencies)',
    )
    .allowUnknownOption(true)
    .helpOption(false)
    .argument(
      '[args...]',
      'passed to the benchmark: --size, --systems, --report, --repeat, --synchronous, --help',
    )
    .action(async (args: string[]) => {
      const main = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'bench', 'main.js');
      const entry = import.meta.url.endsWith('.ts') ? main.replace(/\.js$/, '.ts') : main;
      const execArgv = entry.endsWith('.ts') ? ['--import', 'tsx'] : [];
      const code = await new Promise<number>((resolve) => {
        const child = spawn(process.execPath, [...execArgv, entry, ...args], { stdio: 'inherit' });
        child.on('exit', (status) => resolve(status ?? 1));
      });
      process.exitCode = code;
    });
}
