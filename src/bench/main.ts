/**
 * `npm run bench`: the checkpoint benchmark of SPEC 7 (agentstate's stores, LangGraph.js's savers and the
 * raw driver, same payload, one run). Writes a JSON report and a Markdown table next to it.
 *
 *   node dist/src/bench/main.js [--size full|small|tiny] [--systems default|all|sqlite|postgres|NAME,...]
 *                                [--report PATH.json] [--synchronous NORMAL|FULL|OFF] [--repeat N]
 */
import { writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { parseArgs } from 'node:util';
import { makeFolder } from '../process/folders.js';
import { runBenchmark } from './checkpoint/bench.js';
import { toMarkdown } from './checkpoint/report.js';
import { SIZES } from './checkpoint/run.js';
import { selectSystems } from './checkpoint/systems/index.js';

const USAGE = `usage: agentstate bench [--size full|small|tiny] [--systems LIST] [--report PATH.json] [--synchronous NORMAL|FULL|OFF] [--repeat N]
  --repeat   run every system N times, interleaved, and report medians (default 1)
  --systems  comma-separated names or groups: default (memory + sqlite systems), all, memory, sqlite,
             postgres, redis, or names such as agentstate-sqlite,langgraph-sqlite,raw-sqlite,raw-pg-8`;

function fail(message: string): never {
  process.stderr.write(`${message}\n${USAGE}\n`);
  process.exit(2);
}

function parseOptions() {
  try {
    return parseArgs({
      options: {
        size: { type: 'string', default: 'full' },
        systems: { type: 'string', default: 'default' },
        report: { type: 'string', default: 'reports/bench/checkpoints.json' },
        synchronous: { type: 'string', default: 'NORMAL' },
        repeat: { type: 'string', default: '1' },
        help: { type: 'boolean', default: false },
      },
    }).values;
  } catch (error) {
    // An unknown option or a missing value: parseArgs's own sentence, not its stack.
    return fail(error instanceof Error ? error.message : String(error));
  }
}

async function main(): Promise<void> {
  const values = parseOptions();
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const size = values.size;
  if (!(size in SIZES)) fail(`unknown --size ${size}`);
  const synchronous = values.synchronous.toUpperCase();
  if (synchronous !== 'NORMAL' && synchronous !== 'FULL' && synchronous !== 'OFF') {
    fail(`unknown --synchronous ${values.synchronous}`);
  }
  const repeat = Number(values.repeat);
  if (!Number.isInteger(repeat) || repeat < 1 || repeat > 20)
    fail(`--repeat must be an integer from 1 to 20`);
  let systems: ReturnType<typeof selectSystems>;
  try {
    systems = selectSystems(values.systems);
  } catch (error) {
    fail((error as Error).message);
  }
  const report = await runBenchmark({
    size: size as keyof typeof SIZES,
    systems,
    synchronous,
    repeat,
    postgresUrl:
      process.env.AGENTSTATE_BENCH_POSTGRES_URL ??
      process.env.AGENTSTATE_TEST_POSTGRES_URL ??
      'postgres://postgres@127.0.0.1:5432/test',
    redisUrl:
      process.env.AGENTSTATE_BENCH_REDIS_URL ??
      process.env.AGENTSTATE_TEST_REDIS_URL ??
      'redis://127.0.0.1:6379',
    onSystem: (result, index, total) => {
      const status =
        result.error === null ? `put ${result.ops?.put.ops_per_s} ops/s` : `failed: ${result.error}`;
      process.stderr.write(`[${index + 1}/${total}] ${result.name}: ${status}\n`);
    },
  });
  const markdown = toMarkdown(report);
  const jsonPath = values.report;
  const markdownPath = jsonPath.endsWith('.json') ? `${jsonPath.slice(0, -5)}.md` : `${jsonPath}.md`;
  makeFolder(dirname(jsonPath), 'for the report');
  writeFileSync(jsonPath, `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(markdownPath, markdown);
  process.stdout.write(`${markdown}\nReport: ${jsonPath} and ${markdownPath}\n`);
  if (report.systems.some((s) => s.error !== null)) process.exitCode = 1;
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
