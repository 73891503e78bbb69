import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { newId } from '../../src/core/ids.js';
import { tallyEffectLog } from '../../src/demo/effects.js';
import { HOLD_ENV, HOLD_MS_ENV } from '../../src/harness/crash/points.js';
import { type ChildArgs, runChild } from '../../src/harness/crash/spawn-child.js';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'crash-concurrent-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it('two processes resuming one session at once: exactly one runs it, the other gets a conflict', async () => {
  const base: ChildArgs = {
    storeUrl: `sqlite:${join(dir, 'state.db')}`,
    sessionId: newId('session'),
    workspaceDir: join(dir, 'ws'),
    tenantId: 'crash-concurrent',
    userId: `u-${newId('run').slice(4, 14)}`,
    leaseOwner: 'first',
    crashAt: 'tool:deploy.write_files:before_effect',
    leaseTtlMs: 1_000,
  };
  const first = await runChild(base);
  expect(first.signal).toBe('SIGKILL');
  // the dead owner's lease expires after its TTL; then two processes race for the session
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  const hold = { [HOLD_ENV]: 'tool:deploy.build:before_effect', [HOLD_MS_ENV]: '3000' };
  const racers = await Promise.all(
    ['racer-a', 'racer-b'].map((owner) =>
      runChild({ ...base, leaseOwner: owner, crashAt: null, leaseTtlMs: 30_000, env: hold }),
    ),
  );
  const winners = racers.filter((r) => r.exitCode === 0 && r.events.some((e) => e.event === 'done'));
  const losers = racers.filter((r) => r.exitCode === 3 && r.events.some((e) => e.event === 'conflict'));
  expect(winners).toHaveLength(1);
  expect(losers).toHaveLength(1);
  expect(losers[0]?.events.some((e) => e.event === 'point')).toBe(false);
  const done = winners[0]?.events.find((e) => e.event === 'done') as {
    output: { tasks: { state: string }[] };
  };
  expect(done.output.tasks.map((t) => t.state)).toEqual(['DONE']);
  const effects = tallyEffectLog(join(base.workspaceDir, 'deploy-effects.jsonl'));
  expect(Object.values(effects.steps).map((s) => s.effects)).toEqual([1, 1, 1, 1, 1]);
  // the killed first call reached the tool before its effect: 6 calls, none after its step was done
  expect(effects.calls).toBe(6);
  expect(effects.redundant_calls).toBe(0);
}, 120_000);
