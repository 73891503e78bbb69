/**
 * The LangGraph workload (put, getTuple of the latest, list of 40) through AgentStateSaver beside
 * LangGraph's MemorySaver, SqliteSaver and PostgresSaver, in one run, reported as ratios.
 *
 *   node --import tsx src/bench/langgraph/main.ts [--size full|small|tiny] [--no-postgres] [--repeat N]
 *                                                  [--report reports/bench/langgraph.json]
 */
import { writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { parseArgs } from 'node:util';
import { makeFolder } from '../../process/folders.js';
import { runBenchmark } from '../checkpoint/bench.js';
import { toMarkdown } from '../checkpoint/report.js';
import { SIZES } from '../checkpoint/run.js';
import { selectSystems } from '../checkpoint/systems/index.js';
import { saverMemory, saverPostgres, saverSqlite } from './systems.js';

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      size: { type: 'string', default: 'small' },
      'no-postgres': { type: 'boolean', default: false },
      repeat: { type: 'string', default: '1' },
      report: { type: 'string', default: 'reports/bench/langgraph.json' },
    },
  });
  if (!(values.size in SIZES)) throw new Error(`unknown --size ${values.size}`);
  const repeat = Number(values.repeat);
  if (!Number.isInteger(repeat) || repeat < 1 || repeat > 20) throw new Error('--repeat must be 1..20');
  const langgraph = selectSystems(
    values['no-postgres']
      ? 'langgraph-memory,langgraph-sqlite'
      : 'langgraph-memory,langgraph-sqlite,langgraph-postgres',
  );
  const [lgMemory, lgSqlite, lgPostgres] = langgraph;
  const systems = [
    lgMemory,
    saverMemory,
    lgSqlite,
    saverSqlite,
    ...(lgPostgres ? [lgPostgres, saverPostgres] : []),
  ];
  const report = await runBenchmark({
    size: values.size as keyof typeof SIZES,
    systems: systems.filter((s) => s !== undefined),
    synchronous: 'NORMAL',
    repeat,
    postgresUrl: process.env.AGENTSTATE_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
    redisUrl: process.env.AGENTSTATE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379',
    onSystem: (result, index, total) => {
      const status =
        result.error === null ? `put ${result.ops?.put.ops_per_s} ops/s` : `failed: ${result.error}`;
      process.stderr.write(`[${index + 1}/${total}] ${result.name}: ${status}\n`);
    },
  });
  const markdown = toMarkdown(report).replace(
    /^# .*$/m,
    "# LangGraph checkpointer benchmark: AgentStateSaver beside LangGraph's savers",
  );
  makeFolder(dirname(values.report), 'for the report');
  writeFileSync(values.report, `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(values.report.replace(/\.json$/, '.md'), markdown);
  process.stdout.write(markdown);
  if (report.systems.some((s) => s.error !== null)) process.exitCode = 1;
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
