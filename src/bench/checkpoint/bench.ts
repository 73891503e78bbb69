/** The checkpoint benchmark: every selected system, one after another, on the same payload, in one run. */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { jsonBytes, runStates } from './payload.js';
import { mergeRepeats } from './repeat.js';
import { type BenchReport, ratios } from './report.js';
import { runSystem, SIZES, type SystemResult } from './run.js';
import type { SystemContext, SystemSpec } from './system.js';

export interface BenchOptions {
  readonly size: keyof typeof SIZES;
  readonly systems: readonly SystemSpec[];
  readonly synchronous: SystemContext['synchronous'];
  readonly postgresUrl: string;
  readonly redisUrl: string;
  /** Runs of every system, interleaved; figures are medians. Default 1. */
  readonly repeat?: number;
  /** Called after each system, for progress output. */
  readonly onSystem?: (result: SystemResult, index: number, total: number) => void;
}

export async function runBenchmark(options: BenchOptions): Promise<BenchReport> {
  const size = SIZES[options.size];
  const states = runStates(size.steps);
  const started_at = new Date().toISOString();
  const loadBefore = loadavg()[0] ?? 0;
  const dir = mkdtempSync(join(tmpdir(), 'agentstate-bench-'));
  const repeat = Math.max(1, options.repeat ?? 1);
  const runs: SystemResult[][] = options.systems.map(() => []);
  const total = repeat * options.systems.length;
  try {
    for (let r = 0; r < repeat; r++) {
      for (const [index, spec] of options.systems.entries()) {
        const context: SystemContext = {
          dir: mkdtempSync(join(dir, `${spec.name}-`)),
          synchronous: options.synchronous,
          postgresUrl: options.postgresUrl,
          redisUrl: options.redisUrl,
          tag: randomBytes(6).toString('hex'),
        };
        const result = await runSystem(spec, context, size, states);
        runs[index]?.push(result);
        options.onSystem?.(result, r * options.systems.length + index, total);
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const results = runs.map(mergeRepeats);
  const sizes = states.map(jsonBytes);
  const cpu = cpus();
  return {
    benchmark: 'checkpoints',
    version: 1,
    started_at,
    finished_at: new Date().toISOString(),
    environment: {
      node: process.versions.node,
      platform: `${process.platform}-${process.arch}`,
      cpus: cpu.length,
      cpu: cpu[0]?.model.trim() ?? 'unknown',
      load_average_1m: {
        before: Math.round(loadBefore * 100) / 100,
        after: Math.round((loadavg()[0] ?? 0) * 100) / 100,
      },
    },
    size: options.size,
    config: {
      ...size,
      repeat,
      puts: size.runs * size.steps,
      sqlite_synchronous: options.synchronous,
      journal_mode: 'WAL',
    },
    payload: {
      initial_state_bytes: sizes[0] ?? 0,
      final_state_bytes: sizes.at(-1) ?? 0,
      mean_state_bytes: Math.round(sizes.reduce((a, b) => a + b, 0) / Math.max(1, sizes.length)),
    },
    systems: results,
    ratios: ratios(results),
  };
}
