/**
 * `npm run bench:builds` at a tiny size, the built checkout against itself (as `npm test` builds it first):
 * every store and operation gets a row with both builds' figures, a folder that is not a build is refused.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, expect, it } from 'vitest';

const run = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'agentstate-bench-builds-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const POSTGRES_URL = process.env.AGENTSTATE_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const REDIS_URL = process.env.AGENTSTATE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const env = {
  ...process.env,
  AGENTSTATE_BENCH_POSTGRES_URL: POSTGRES_URL,
  AGENTSTATE_BENCH_REDIS_URL: REDIS_URL,
};

it('measures each store and operation of two builds, interleaved', async () => {
  const { stdout } = await run(
    process.execPath,
    [
      'dist/src/bench/builds/main.js',
      '--before',
      '.',
      '--size',
      'tiny',
      '--repeat',
      '2',
      '--stores',
      'memory,sqlite,postgres,redis',
    ],
    { env, timeout: 120_000 },
  );
  const rows = stdout
    .split('\n')
    .filter((line) => /^\| (memory|sqlite|postgres|redis) \|/.test(line))
    .map((line) => line.split('|').map((cell) => cell.trim()));
  expect(rows.map((cells) => `${cells[1]} ${cells[2]}`)).toEqual(
    ['memory', 'sqlite', 'postgres', 'redis'].flatMap((store) =>
      ['put', 'latest', 'history'].map((op) => `${store} ${op}`),
    ),
  );
  const ratio = /^\d+\.\d\d \(\d+\.\d\d - \d+\.\d\d\)$/;
  for (const cells of rows) {
    // ops/s and CPU µs per operation of each build, and the ratios of the two.
    for (const figure of [cells[3], cells[4], cells[6], cells[7]]) expect(Number(figure)).toBeGreaterThan(0);
    expect(cells[5]).toMatch(ratio);
    expect(cells[8]).toMatch(ratio);
  }
  expect(stdout).toContain('2 runs per build and store, interleaved');
});

it('refuses a folder that holds no build, naming it', async () => {
  const failed = await run(process.execPath, ['dist/src/bench/builds/main.js', '--before', dir], {
    env,
    timeout: 30_000,
  }).catch((error: { code: number; stderr: string }) => error);
  expect('code' in failed && failed.code).toBe(2);
  expect((failed as { stderr: string }).stderr).toContain(`${dir}: no dist/src/store/open.js`);
});
