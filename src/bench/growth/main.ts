/**
 * The growth benchmark as a command:
 *
 *   npm run bench:growth -- [--stores sqlite,postgres,redis,memory] [--messages 0,1000,5000,20000]
 *        [--tasks 0,1000,5000] [--turns 40] [--report reports/bench/growth.json]
 *
 * Each store is fresh and removed afterwards (src/bench/stores.ts); one that cannot be opened is skipped
 * with a note in the report.
 */
import { writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { parseArgs } from 'node:util';
import { makeFolder } from '../../process/folders.js';
import { openBenchStore } from '../stores.js';
import { type GrowthBenchResult, growthBenchMarkdown, runGrowthBench } from './bench.js';

function sizes(text: string, option: string): number[] {
  const list = text.split(',').map((part) => Number(part.trim()));
  if (list.length === 0 || list.some((n) => !Number.isInteger(n) || n < 0))
    throw new Error(`${option}: a comma-separated list of whole numbers, got ${JSON.stringify(text)}`);
  return [...list].sort((a, b) => a - b);
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      stores: { type: 'string', default: 'sqlite,postgres,redis,memory' },
      messages: { type: 'string', default: '0,1000,5000,20000' },
      tasks: { type: 'string', default: '0,1000,5000' },
      turns: { type: 'string', default: '40' },
      report: { type: 'string', default: 'reports/bench/growth.json' },
    },
  });
  const turns = Number(values.turns);
  if (!Number.isInteger(turns) || turns < 1)
    throw new Error(`--turns: a positive whole number, got ${values.turns}`);
  const messageLevels = sizes(values.messages, '--messages');
  const taskLevels = sizes(values.tasks, '--tasks');
  const results: GrowthBenchResult[] = [];
  const skipped: { store: string; reason: string }[] = [];
  for (const name of values.stores
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    let opened: Awaited<ReturnType<typeof openBenchStore>>;
    try {
      opened = await openBenchStore(name, 'growth');
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      skipped.push({ store: name, reason });
      process.stderr.write(`${name}: skipped (${reason})\n`);
      continue;
    }
    try {
      results.push(
        await runGrowthBench({
          store: opened.store,
          label: name,
          messageLevels,
          taskLevels,
          turns,
          onProgress: (text) => process.stderr.write(`${text}\n`),
        }),
      );
    } finally {
      await opened.done();
    }
  }
  const when = new Date().toISOString();
  makeFolder(dirname(values.report), 'for the report');
  writeFileSync(values.report, `${JSON.stringify({ when, results, skipped }, null, 2)}\n`);
  const markdown = growthBenchMarkdown(results, when);
  writeFileSync(values.report.replace(/\.json$/, '.md'), markdown);
  process.stdout.write(markdown);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
