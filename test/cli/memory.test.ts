/** `agentstate memory` as a user runs it: real child processes on a real SQLite file. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/core/ids.js';
import { openStore } from '../../src/store/open.js';
import type { StateStore } from '../../src/store/types.js';
import { hasStackTrace, runCli, tempDir } from './run.js';

const tmp = tempDir();
const url = `sqlite:${tmp.dir}/state.db`;
const tenant = `t_${newId('run').slice(4, 14)}`;
const common = ['--store', url, '--tenant', tenant];
let store: StateStore;

beforeAll(async () => {
  store = await openStore(url);
  await store.putMemory(
    { tenant_id: tenant, user_id: 'grace' },
    { namespace: 'preferences', key: 'flight_booking.cabin_class', value: 'first', ttl_seconds: null },
  );
});

afterAll(async () => {
  await store.close();
  tmp.cleanup();
});

function expectOneSentence(result: { code: number | null; stderr: string }, pattern: RegExp): void {
  expect(result.code).toBe(1);
  expect(hasStackTrace(result.stderr)).toBe(false);
  // One sentence; commander's own option errors add its usage hint line.
  const lines = result.stderr.trim().split('\n');
  expect(lines.slice(1).filter((line) => line !== '(run with --help for usage)')).toEqual([]);
  expect(result.stderr).toMatch(pattern);
}

// Each test runs eight or nine CLI processes one after the other: a few seconds each when the suite loads the machine.
describe('agentstate memory', { timeout: 120_000 }, () => {
  it('puts, gets, lists and removes items of one user', async () => {
    const put = await runCli(
      ['memory', 'put', 'ada', 'preferences', 'flight_booking.cabin_class', '"business"', ...common],
      tmp.dir,
    );
    expect(put.stderr).toBe('');
    expect(put.code).toBe(0);
    expect(put.stdout).toContain('stored preferences/flight_booking.cabin_class for user ada');
    const stored = await store.getMemory(
      { tenant_id: tenant, user_id: 'ada' },
      'preferences',
      'flight_booking.cabin_class',
    );
    expect(stored?.value).toBe('business');
    expect(stored?.expires_at).toBeNull();

    const ttl = await runCli(
      ['memory', 'put', 'ada', 'facts', 'home', '{"airport":"LHR"}', '--ttl', '3600', '--json', ...common],
      tmp.dir,
    );
    expect(ttl.code).toBe(0);
    const item = JSON.parse(ttl.stdout) as { value: unknown; expires_at: string | null };
    expect(item.value).toEqual({ airport: 'LHR' });
    expect(item.expires_at).not.toBeNull();

    const get = await runCli(['memory', 'get', 'ada', 'facts', 'home', ...common], tmp.dir);
    expect(get.code).toBe(0);
    expect(JSON.parse(get.stdout)).toEqual({ airport: 'LHR' });

    const ls = await runCli(['memory', 'ls', '--user', 'ada', '--json', ...common], tmp.dir);
    expect(ls.code).toBe(0);
    const listed = JSON.parse(ls.stdout) as { namespace: string; key: string; user_id: string }[];
    expect(listed.map((i) => `${i.namespace}/${i.key}`)).toEqual([
      'preferences/flight_booking.cabin_class',
      'facts/home',
    ]);
    expect(listed.every((i) => i.user_id === 'ada')).toBe(true);

    const table = await runCli(
      ['memory', 'ls', '--user', 'ada', '--namespace', 'preferences', '--prefix', 'flight', ...common],
      tmp.dir,
    );
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/flight_booking\.cabin_class\s+"business"/);
    expect(table.stdout).not.toContain('home');

    const none = await runCli(['memory', 'ls', '--user', 'nobody', ...common], tmp.dir);
    expect(none.code).toBe(0);
    expect(none.stdout).toContain('no memory items for user nobody');

    const rm = await runCli(['memory', 'rm', 'ada', 'facts', 'home', ...common], tmp.dir);
    expect(rm.code).toBe(0);
    expect(await store.getMemory({ tenant_id: tenant, user_id: 'ada' }, 'facts', 'home')).toBeNull();
    // Grace's item (same tenant, another user) is untouched and not listed for ada.
    const grace = await runCli(
      ['memory', 'get', 'grace', 'preferences', 'flight_booking.cabin_class', ...common],
      tmp.dir,
    );
    expect(JSON.parse(grace.stdout)).toBe('first');
  });

  it('ends with one sentence on bad input and changes nothing', async () => {
    const badJson = await runCli(['memory', 'put', 'ada', 'facts', 'x', '{oops', ...common], tmp.dir);
    expectOneSentence(badJson, /value must be JSON/);
    expect(await store.getMemory({ tenant_id: tenant, user_id: 'ada' }, 'facts', 'x')).toBeNull();

    expectOneSentence(
      await runCli(['memory', 'put', 'ada', '_summaries:s1', 'k', '1', ...common], tmp.dir),
      /reserved/,
    );
    expectOneSentence(
      await runCli(['memory', 'put', 'ada', 'facts', 'x', '1', '--ttl', '0', ...common], tmp.dir),
      /ttl/,
    );
    expectOneSentence(await runCli(['memory', 'ls', ...common], tmp.dir), /needs --user/);
    expectOneSentence(
      await runCli(['memory', 'get', 'ada', 'facts', 'missing', ...common], tmp.dir),
      /no memory item facts\/missing for user ada/,
    );
    expectOneSentence(
      await runCli(['memory', 'rm', 'ada', 'facts', 'missing', ...common], tmp.dir),
      /no memory item facts\/missing/,
    );
    expectOneSentence(
      await runCli(['memory', 'get', 'ada', 'bad namespace!', 'k', ...common], tmp.dir),
      /namespace/,
    );
    // Another tenant does not see this tenant's items.
    const other = await runCli(
      [
        'memory',
        'get',
        'grace',
        'preferences',
        'flight_booking.cabin_class',
        '--store',
        url,
        '--tenant',
        `${tenant}x`,
      ],
      tmp.dir,
    );
    expect(other.code).toBe(1);
  });
});
