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
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { makeFolder } from '../../process/folders.js';
import { openStore } from '../../store/open.js';
import type { StateStore } from '../../store/types.js';
import { type ContextBenchResult, runContextBench } from './bench.js';
import { contextBenchMarkdown } from './report.js';

async function open(name: string): Promise<{ store: StateStore; done: () => Promise<void> }> {
  if (name === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'agentstate-ctx-bench-'));
    const store = await openStore(`sqlite:${join(dir, 'bench.db')}`);
    const done = async () => {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    };
    return { store, done };
  }
  if (name === 'postgres') {
    // A fresh schema, dropped afterwards, so the run never touches other data in the database.
    const base = process.env.AGENTSTATE_BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
    const schema = `bench_ctx_${Math.random().toString(36).slice(2, 10)}`;
    const url = new URL(base);
    url.searchParams.set('schema', schema);
    const store = await openStore(url.toString());
    const done = async () => {
      await store.close();
      url.searchParams.delete('schema');
      const client = new pg.Client({ connectionString: url.toString() });
      await client.connect();
      await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await client.end();
    };
    return { store, done };
  }
  if (name === 'memory') {
    const store = await openStore('memory:');
    return { store, done: () => store.close() };
  }
  throw new Error(`unknown store ${name}: use sqlite, postgres or memory`);
}

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
