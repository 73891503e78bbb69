/**
 * The context benchmark as a command:
 *
 *   node --import tsx src/bench/context/main.ts [--stores sqlite,postgres,memory] [--messages 100000]
 *        [--iterations 200] [--max-tokens 4000] [--report reports/bench/context.json]
 *
 * sqlite uses a fresh file in a temp dir; postgres a fresh schema (dropped afterwards) in
 * AGENTSTATE_BENCH_POSTGRES_URL (default postgres://postgres@127.0.0.1:5432/test); a store that cannot be
 * opened is skipped with a note in the report.
 */
import { writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { parseArgs } from 'node:util';
import { makeFolder } from '../../process/folders.js';
import { openBenchStore } from '../stores.js';
import { type ContextBenchResult, runContextBench } from './bench.js';
import { contextBenchMarkdown } from './report.js';

const open = (name: string) => openBenchStore(name, 'ctx');

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      stores: { type: 'string', default: 'sqlite,postgres' },
      messages: { type: 'string', default: '100000' },
      short: { type: 'string', default: '100' },
      iterations: { type: 'string', default: '200' },
      'max-tokens': { type: 'string', default: '2000' },
      report: { type: 'string', default: 'reports/bench/context.json' },
    },
  });
  const results: ContextBenchResult[] = [];
  const skipped: { store: string; reason: string }[] = [];
  for (const name of values.stores
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    let opened: Awaited<ReturnType<typeof open>>;
    try {
      opened = await open(name);
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      skipped.push({ store: name, reason });
      process.stderr.write(`${name}: skipped (${reason})\n`);
      continue;
    }
    try {
      const result = await runContextBench({
        store: opened.store,
        label: name,
        longMessages: Number(values.messages),
        shortMessages: Number(values.short),
        iterations: Number(values.iterations),
        maxTokens: Number(values['max-tokens']),
        onProgress: (text) => process.stderr.write(`${text}\n`),
      });
      results.push(result);
      process.stderr.write(
        `${name}: p50 short ${result.short.p50_ms} ms, long ${result.long.p50_ms} ms, ratio ${result.ratio_p50}\n`,
      );
    } finally {
      await opened.done();
    }
  }
  const when = new Date().toISOString();
  makeFolder(dirname(values.report), 'for the report');
  writeFileSync(values.report, `${JSON.stringify({ when, results, skipped }, null, 2)}\n`);
  const markdown = contextBenchMarkdown(results, when);
  writeFileSync(values.report.replace(/\.json$/, '.md'), markdown);
  process.stdout.write(markdown);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
