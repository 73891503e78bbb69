/**
 * `npm run bench:turn` at a tiny size, the built checkout against itself (as `npm test` builds it first):
 * every store and build gets its row, the bookings book, the statements are those the round-trip tests pin
 * (test/runtime/postgres-round-trips.test.ts), and bad options are refused.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, expect, it } from 'vitest';
import type { TurnBenchResult } from '../../src/bench/turn/bench.js';

const run = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'agentstate-bench-turn-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const env = {
  ...process.env,
  AGENTSTATE_BENCH_POSTGRES_URL:
    process.env.AGENTSTATE_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
};

it('measures each kind of turn of two builds on each store, round by round', async () => {
  const report = join(dir, 'turn.json');
  // A start checkpoint that waits for the run's first write, and no read for a cancel, however long the
  // loaded machine takes: the statements counted are the turn's own.
  const args = ['--before', '.', '--stores', 'memory,sqlite,postgres', '--users', '2', '--warm', '1'];
  args.push('--checkpoint-defer-ms', '600000', '--cancel-check-ms', '600000');
  const { stdout } = await run(
    process.execPath,
    ['dist/src/bench/turn/main.js', ...args, '--rounds', '2', '--report', report],
    { env, timeout: 120_000 },
  );
  const rows = stdout
    .split('\n')
    .filter((line) => /^\| (memory|sqlite|postgres) \| (before|after) \|/.test(line))
    .map((line) => line.split('|').map((cell) => cell.trim()));
  expect(rows.map((cells) => `${cells[1]} ${cells[2]}`)).toEqual(
    ['memory', 'sqlite', 'postgres'].flatMap((store) => [`${store} before`, `${store} after`]),
  );
  const result = JSON.parse(readFileSync(report, 'utf8')) as TurnBenchResult;
  expect(result.rounds).toHaveLength(12);
  for (const round of result.rounds) {
    expect(round.slot_filling.turns).toBe(8);
    expect(round.confirming.turns).toBe(2);
    expect(round.slot_filling.cpu_us_per_turn).toBeGreaterThan(0);
    expect(round.confirming.cpu_us_per_turn).toBeGreaterThan(round.slot_filling.cpu_us_per_turn / 4);
  }
  const statements = (store: string) =>
    result.summary.find((row) => row.store === store && row.build === 'after');
  // A PostgreSQL slot-filling turn: the lease with the head, the final commit, and a booking's first turn
  // reads the user's preferences too: 9 statements for 4 turns. A confirming turn adds the commit that
  // begins the booking's action, which carries the run's start checkpoint and its recovery mark (the final
  // commit removes the mark): 3. The memory store sends none.
  expect(statements('postgres')?.slot_filling_statements).toBe(2.3);
  expect(statements('postgres')?.confirming_statements).toBe(3);
  expect(statements('memory')?.slot_filling_statements).toBe(0);
  expect(statements('sqlite')?.slot_filling_statements).toBeGreaterThan(3);
  // The ratio of the two builds, per kind of turn and round.
  expect(stdout).toMatch(/^\| sqlite \| \d+\.\d\d \(\d+\.\d\d, \d+\.\d\d\) \| \d+\.\d\d \(/m);
});

it('refuses a folder that holds no build, an unknown store and a bad defer, naming them', async () => {
  const noBuild = await run(process.execPath, ['dist/src/bench/turn/main.js', '--before', dir]).catch(
    (error: { code: number; stderr: string }) => error,
  );
  expect(noBuild).toMatchObject({ code: 2 });
  expect((noBuild as { stderr: string }).stderr).toContain(`${dir}: no dist/src/runtime/turn.js`);
  const unknown = await run(process.execPath, ['dist/src/bench/turn/main.js', '--stores', 'mysql']).catch(
    (error: { code: number; stderr: string }) => error,
  );
  expect((unknown as { stderr: string }).stderr).toContain('unknown store mysql');
  const defer = await run(process.execPath, [
    'dist/src/bench/turn/main.js',
    '--checkpoint-defer-ms',
    'soon',
  ]).catch((error: { code: number; stderr: string }) => error);
  expect(defer).toMatchObject({ code: 2 });
  expect((defer as { stderr: string }).stderr).toContain(
    '--checkpoint-defer-ms: a whole number of ms from 0 to 3600000, got "soon"',
  );
});
