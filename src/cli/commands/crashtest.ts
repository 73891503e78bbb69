/**
 * `agentstate crashtest`: runs an agent in child processes, SIGKILLs them at every step boundary and inside
 * tool calls, resumes, and compares with an uninterrupted run (src/harness/crash). `--agent deploy_pipeline`
 * (the default) is the slot-filling pipeline; `--agent tool_loop` is the model-driven tool-loop agent, with
 * `--framework` the way its loop is written.
 */
import type { Command } from 'commander';
import { DEFAULT_STORE_URL, openStore } from '../../store/open.js';
import { CliError, isInProcessStore } from '../context.js';
import { print } from '../format.js';

const AGENTS = ['deploy_pipeline', 'tool_loop'] as const;
const FRAMEWORKS = ['plain', 'ai-sdk', 'openai-agents', 'langgraph'] as const;

function positiveInteger(name: string, value: string): number {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 1)
    throw new CliError(`${name} must be a positive integer, not ${value}`);
  return parsed;
}

interface Options {
  store: string;
  kills: string;
  report: string;
  agent: string;
  framework?: string;
}

export function registerCrashTestCommand(program: Command): void {
  program
    .command('crashtest')
    .description('run an agent, SIGKILL it at every step boundary and inside tool calls, resume, compare')
    .option('--store <url>', 'store URL', DEFAULT_STORE_URL)
    .option('--kills <n>', 'number of kills (at least the number of kill points for full coverage)', '20')
    .option(
      '--report <path>',
      'JSON report path (a Markdown summary is written beside it)',
      'reports/crash.json',
    )
    .option('--agent <name>', `the agent: ${AGENTS.join(' or ')}`, 'deploy_pipeline')
    .option('--framework <name>', `tool_loop only: how its loop is written (${FRAMEWORKS.join(', ')})`)
    .action(async (options: Options) => {
      const kills = positiveInteger('--kills', options.kills);
      if (!(AGENTS as readonly string[]).includes(options.agent))
        throw new CliError(`--agent must be one of ${AGENTS.join(', ')}, not ${options.agent}`);
      const framework = options.framework ?? (options.agent === 'tool_loop' ? 'plain' : undefined);
      if (options.agent !== 'tool_loop' && framework !== undefined)
        throw new CliError('--framework goes with --agent tool_loop');
      if (framework !== undefined && !(FRAMEWORKS as readonly string[]).includes(framework))
        throw new CliError(`--framework must be one of ${FRAMEWORKS.join(', ')}, not ${framework}`);
      // A bad store URL fails here, in the sentence every command gives, before any child is spawned.
      const store = await openStore(options.store);
      await store.close();
      if (isInProcessStore(options.store)) {
        throw new CliError(
          `crashtest needs a store that a new process can open again (sqlite:FILE, postgres://, redis://, tiered:); ${options.store} dies with each killed child`,
        );
      }
      const { runCrashTest } = await import('../../harness/crash/index.js');
      const subject =
        framework === undefined
          ? undefined
          : await (await import('../../harness/crash/tool-loop/subject.js')).toolLoopSubject(
              framework as (typeof FRAMEWORKS)[number],
            );
      const result = await runCrashTest({
        storeUrl: options.store,
        kills,
        reportPath: options.report,
        onProgress: (line) => process.stderr.write(`${line}\n`),
        ...(subject === undefined ? {} : { subject }),
      });
      print(result.markdown);
      // Anything short of the goal fails the command: a lost run, another output, a duplicate effect or a
      // redundant call in the downstream's effect log, or a planned kill that never fired.
      if (!result.report.goal_met) process.exitCode = 1;
    });
}
