/**
 * The acceptance harnesses of SPEC 7 as commands: `crashtest` (kill -9 at every step, resume, compare),
 * `ttltest` (idle sessions must leave the store) and `bench` (the checkpoint benchmark beside LangGraph.js
 * and the raw drivers). `loadtest` is registered by src/harness/load.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';
import { typeScriptLoaderArgs } from '../../process/typescript-child.js';
import { CliError } from '../context.js';
import { print } from '../format.js';
import { registerCrashTestCommand } from './crashtest.js';

function positiveInteger(name: string, value: string): number {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 1)
    throw new CliError(`${name} must be a positive integer, not ${value}`);
  return parsed;
}

export function registerHarnessCommands(program: Command): void {
  registerCrashTestCommand(program);

  program
    .command('ttltest')
    .description('create idle sessions with a TTL, wait, then count what remains in the store itself')
    .option('--store <url>', 'store URL (default: a temporary sqlite: file, removed after the run)')
    .option('--sessions <n>', 'sessions to create', '1000')
    .option('--ttl <seconds>', 'their TTL', '60')
    .option('--wait <seconds>', 'idle time before counting', '120')
    .option('--messages <n>', 'messages per session', '4')
    .option('--sweep-interval <ms>', "the sweeper's interval, as in a server", '30000')
    .option(
      '--report <path>',
      'JSON report path (a Markdown summary is written beside it)',
      'reports/ttl.json',
    )
    .action(
      async (options: {
        store?: string;
        sessions: string;
        ttl: string;
        wait: string;
        messages: string;
        sweepInterval: string;
        report: string;
      }) => {
        const { runTtlTest } = await import('../../harness/ttl/run.js');
        const temp = options.store === undefined ? mkdtempSync(join(tmpdir(), 'agentstate-ttltest-')) : null;
        const report = await runTtlTest({
          storeUrl: options.store ?? `sqlite:${join(temp as string, 'ttl.db')}`,
          sessions: positiveInteger('--sessions', options.sessions),
          ttlSeconds: positiveInteger('--ttl', options.ttl),
          waitSeconds: positiveInteger('--wait', options.wait),
          messagesPerSession: positiveInteger('--messages', options.messages),
          sweepIntervalMs: positiveInteger('--sweep-interval', options.sweepInterval),
          reportPath: options.report,
          onProgress: (p) => process.stderr.write(`${p.phase} ${p.done}/${p.total}\n`),
        }).finally(() => {
          if (temp !== null) rmSync(temp, { recursive: true, force: true });
        });
        print(
          `${report.store}: ${report.residual} of ${report.sessions} sessions remain (${report.residual_pct}%); ` +
            `storage ${report.baseline_bytes} -> ${report.peak_bytes} -> ${report.after_bytes} bytes; report ${options.report}`,
        );
        if (report.residual_pct > 2) process.exitCode = 1;
      },
    );

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
      const execArgv = entry.endsWith('.ts') ? typeScriptLoaderArgs() : [];
      const code = await new Promise<number>((resolve) => {
        const child = spawn(process.execPath, [...execArgv, entry, ...args], { stdio: 'inherit' });
        child.on('exit', (status) => resolve(status ?? 1));
      });
      process.exitCode = code;
    });
}
