/**
 * The run event log's cost, as a command:
 *
 *   npm run bench:events -- [--stores sqlite,postgres] [--bookings 40] [--turns 50]
 *        [--report reports/bench/run-events.json]
 *
 * Per store: what the log costs a turn at the store (store-cost.ts: `--bookings` flight bookings of five
 * turns each way, alternating), then the time from a model's first token to a client's first
 * `message.delta` over HTTP, on the instance running the turn (on its main thread, on a turn thread) and
 * on another one (first-token.ts: `--turns` streamed turns on each of two `serve` processes). `--bookings 0`
 * or `--turns 0` skips that part.
 */
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { dirname } from 'node:path';
import { parseArgs } from 'node:util';
import { makeFolder } from '../../process/folders.js';
import { type FirstTokenResult, type LatencyFigures, runFirstTokenBench } from './first-token.js';
import { type CostResult, openCostStore, runCostBench } from './store-cost.js';

function count(text: string, option: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 0)
    throw new Error(`${option}: a whole number, got ${JSON.stringify(text)}`);
  return n;
}

export function runEventsMarkdown(
  cost: readonly CostResult[],
  latency: readonly FirstTokenResult[],
  when: string,
): string {
  const lines = [`# The run event log's cost`, '', `Run ${when}, load average ${loadavg()[0]?.toFixed(2)}.`];
  if (cost.length > 0) {
    lines.push(
      '',
      '| store | turns each way | CPU ms per turn, log / none: mean (extra), paired extra p50 | wall ms per turn, log / none: p50, mean (extra), paired extra p50 | statements per turn, log / none (extra) | events per turn | bytes per turn in run_events |',
      '| --- | --- | --- | --- | --- | --- | --- |',
    );
    for (const r of cost)
      lines.push(
        `| ${r.store} | ${r.on.turns} | ${r.on.cpu_ms_per_turn} / ${r.off.cpu_ms_per_turn} (${r.extra_cpu_ms_per_turn}), ${r.extra_cpu_ms_paired_p50} | ${r.on.wall_ms_p50} / ${r.off.wall_ms_p50}, ${r.on.wall_ms_mean} / ${r.off.wall_ms_mean} (${r.extra_wall_ms_per_turn}), ${r.extra_wall_ms_paired_p50} | ${r.on.statements_per_turn} / ${r.off.statements_per_turn} (${r.extra_statements_per_turn}) | ${r.event_rows_per_turn} | ${r.event_bytes_per_turn} |`,
      );
  }
  if (latency.length > 0) {
    lines.push(
      '',
      '| store | same instance, turn on the main thread: p50 / p95 / max ms | same instance, turn on a turn thread | other instance | turns |',
      '| --- | --- | --- | --- | --- |',
    );
    const cell = (f: LatencyFigures) => `${f.p50_ms} / ${f.p95_ms} / ${f.max_ms}`;
    for (const r of latency) {
      lines.push(
        `| ${r.store} | ${cell(r.same_instance_main_thread)} | ${cell(r.same_instance_turn_thread)} (${r.turn_threads} threads) | ${cell(r.other_instance)} | ${r.same_instance_main_thread.turns} + ${r.same_instance_turn_thread.turns} |`,
      );
    }
  }
  return `${lines.join('\n')}\n`;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      stores: { type: 'string', default: 'sqlite,postgres' },
      bookings: { type: 'string', default: '40' },
      turns: { type: 'string', default: '50' },
      report: { type: 'string', default: 'reports/bench/run-events.json' },
    },
  });
  const bookings = count(values.bookings, '--bookings');
  const turns = count(values.turns, '--turns');
  const say = (text: string) => process.stderr.write(`${text}\n`);
  const cost: CostResult[] = [];
  const latency: FirstTokenResult[] = [];
  for (const name of values.stores.split(',').map((s) => s.trim())) {
    if (name !== 'sqlite' && name !== 'postgres')
      throw new Error(`--stores: sqlite or postgres, got ${name}`);
    if (bookings > 0) {
      const handle = await openCostStore(name);
      try {
        cost.push(await runCostBench(handle, bookings, say));
      } finally {
        await handle.done();
      }
    }
    if (turns > 0) {
      const handle = await openCostStore(name);
      try {
        latency.push(await runFirstTokenBench(handle, turns, say));
      } finally {
        await handle.done();
      }
    }
  }
  const when = new Date().toISOString();
  makeFolder(dirname(values.report), 'for the report');
  writeFileSync(values.report, `${JSON.stringify({ when, cost, latency }, null, 2)}\n`);
  const markdown = runEventsMarkdown(cost, latency, when);
  writeFileSync(values.report.replace(/\.json$/, '.md'), markdown);
  process.stdout.write(markdown);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
