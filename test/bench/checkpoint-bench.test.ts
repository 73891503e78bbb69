/**
 * The checkpoint benchmark at a tiny size, run as `npm run bench` runs it (a child process): the report's
 * shape, never its speeds.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import type { BenchReport } from '../../src/bench/checkpoint/report.js';

const run = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'agentstate-bench-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const POSTGRES_URL = process.env.AGENTSTATE_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const REDIS_URL = process.env.AGENTSTATE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

async function bench(
  name: string,
  ...args: string[]
): Promise<{ report: BenchReport; markdown: string; stdout: string }> {
  const path = join(dir, `${name}.json`);
  const { stdout } = await run(
    process.execPath,
    ['--import', 'tsx', 'src/bench/main.ts', '--size', 'tiny', '--report', path, ...args],
    {
      env: {
        ...process.env,
        AGENTSTATE_BENCH_POSTGRES_URL: POSTGRES_URL,
        AGENTSTATE_BENCH_REDIS_URL: REDIS_URL,
      },
      timeout: 120_000,
    },
  );
  const report = JSON.parse(readFileSync(path, 'utf8')) as BenchReport;
  return { report, markdown: readFileSync(join(dir, `${name}.md`), 'utf8'), stdout };
}

function expectMeasured(report: BenchReport, names: string[]): void {
  expect(report.systems.map((s) => s.name)).toEqual(names);
  for (const system of report.systems) {
    expect(system.error, system.name).toBeNull();
    const ops = system.ops;
    expect(ops).not.toBeNull();
    expect(ops?.put.count).toBe(report.config.puts);
    expect(ops?.latest.count).toBe(report.config.gets);
    expect(ops?.history.count).toBe(report.config.lists);
    for (const stats of Object.values(ops ?? {})) {
      expect(stats.ops_per_s).toBeGreaterThan(0);
      expect(stats.p50_ms).toBeGreaterThan(0);
      expect(stats.p50_ms).toBeLessThanOrEqual(stats.p99_ms);
      expect(stats.p99_ms).toBeLessThanOrEqual(stats.max_ms);
    }
    expect(system.stored?.checkpoints).toBe(
      (report.config.runs + report.config.warmupRuns) * report.config.steps,
    );
    expect(system.stored?.bytes_per_checkpoint).toBeGreaterThan(0);
    expect(system.stored?.method).toEqual(expect.any(String));
  }
}

describe('checkpoint benchmark', () => {
  it('runs every default system on the same payload and writes the JSON and Markdown reports', async () => {
    const { report, markdown, stdout } = await bench('default');
    expect(report.benchmark).toBe('checkpoints');
    expect(report.size).toBe('tiny');
    expect(report.config).toMatchObject({
      runs: 2,
      steps: 5,
      puts: 10,
      sqlite_synchronous: 'NORMAL',
      journal_mode: 'WAL',
    });
    expect(report.payload.initial_state_bytes).toBeGreaterThan(8000);
    expect(report.payload.initial_state_bytes).toBeLessThan(9000);
    expect(report.payload.final_state_bytes).toBeGreaterThan(report.payload.initial_state_bytes);
    expectMeasured(report, [
      'agentstate-memory',
      'langgraph-memory',
      'agentstate-sqlite',
      'langgraph-sqlite',
      'raw-sqlite',
    ]);

    const pairs = report.ratios.map((r) => `${r.agentstate}/${r.versus}/${r.operation}`);
    expect(pairs).toEqual(
      [
        'agentstate-memory/langgraph-memory',
        'agentstate-sqlite/langgraph-sqlite',
        'agentstate-sqlite/raw-sqlite',
      ].flatMap((pair) => ['put', 'latest', 'history'].map((op) => `${pair}/${op}`)),
    );
    for (const ratio of report.ratios) {
      const ours = report.systems.find((s) => s.name === ratio.agentstate);
      const theirs = report.systems.find((s) => s.name === ratio.versus);
      const expected =
        (ours?.ops?.[ratio.operation].ops_per_s ?? 0) / (theirs?.ops?.[ratio.operation].ops_per_s ?? 1);
      expect(ratio.ops_per_s).toBeCloseTo(expected, 2);
      expect(ratio.bytes_per_checkpoint).toBeGreaterThan(0);
    }

    expect(markdown).toContain('| system | operation | ops/s | p50 ms | p99 ms |');
    for (const system of report.systems) expect(markdown).toContain(`| ${system.name} | put |`);
    expect(markdown).toContain('| agentstate-sqlite | raw-sqlite | put |');
    expect(stdout).toContain('# Checkpoint benchmark (tiny)');
  });

  it('runs the PostgreSQL and Redis systems when asked, and leaves nothing behind', async () => {
    const pg = (await import('pg')).default;
    const { Redis } = await import('ioredis');
    const client = new pg.Client({ connectionString: POSTGRES_URL });
    const redis = new Redis(REDIS_URL);
    await client.connect();
    try {
      const schemas = async () =>
        (
          await client.query<{ n: string }>(
            "SELECT nspname AS n FROM pg_namespace WHERE nspname LIKE 'agentstate\\_bench\\_%'",
          )
        ).rows
          .map((r) => r.n)
          .sort();
      const keys = async () =>
        [...(await redis.keys('agentstate-bench:*')), ...(await redis.keys('*{bench-*'))].sort();
      const [schemasBefore, keysBefore] = [await schemas(), await keys()];
      const systems = [
        'agentstate-postgres',
        'langgraph-postgres',
        'raw-pg-1',
        'raw-pg-8',
        'agentstate-redis',
        'raw-redis',
      ];
      const { report } = await bench('servers', '--systems', systems.join(','));
      expectMeasured(report, systems);
      expect(report.systems.find((s) => s.name === 'raw-pg-8')?.concurrency).toBe(8);
      expect(report.ratios.map((r) => `${r.agentstate}/${r.versus}`)).toEqual([
        ...Array(3).fill('agentstate-postgres/langgraph-postgres'),
        ...Array(3).fill('agentstate-postgres/raw-pg-1'),
        ...Array(3).fill('agentstate-redis/raw-redis'),
      ]);
      expect(await schemas()).toEqual(schemasBefore);
      expect(await keys()).toEqual(keysBefore);
    } finally {
      await client.end();
      redis.disconnect();
    }
  });

  it('refuses an unknown system or size with exit code 2, writing no report', async () => {
    for (const args of [
      ['--systems', 'nope'],
      ['--size', 'huge'],
    ]) {
      const path = join(dir, 'refused.json');
      const failed = await run(
        process.execPath,
        ['--import', 'tsx', 'src/bench/main.ts', '--report', path, ...args],
        { timeout: 60_000 },
      ).catch((error: { code: number; stderr: string }) => error);
      expect(failed).toMatchObject({ code: 2 });
      expect((failed as { stderr: string }).stderr).toMatch(/unknown/);
      expect(existsSync(path)).toBe(false);
    }
  });
});
