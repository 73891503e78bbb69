/**
 * The exactly-once proof must be able to fail: deliberately broken copies of the runtime (mutations.ts),
 * each run through `agentstate crashtest` at a small size (6 kills on SQLite, one of them a double kill)
 * and through the runtime tests. The unchanged copy, built the same way, passes both: what fails is the
 * mutation, not the build.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { type BuiltCopy, buildCopy, crashTest, runtimeTests } from './mutants/build.js';
import { MUTATIONS } from './mutants/mutations.js';

const KILLS = 6;
const copies: BuiltCopy[] = [];
afterAll(() => {
  for (const copy of copies) copy.remove();
});

async function built(mutation: (typeof MUTATIONS)[number] | null): Promise<BuiltCopy> {
  const copy = await buildCopy(mutation);
  copies.push(copy);
  return copy;
}

describe('the unchanged runtime (built as the mutants are)', () => {
  it('meets the crash goal and passes the runtime tests', async () => {
    const copy = await built(null);
    const crash = await crashTest(copy, KILLS);
    expect(crash.report.failures).toEqual([]);
    expect(crash.report).toMatchObject({
      goal_met: true,
      kills: KILLS,
      duplicate_side_effects: 0,
      redundant_calls: 0,
    });
    expect(crash.exitCode).toBe(0);
    const files = [...new Set(MUTATIONS.flatMap((m) => m.runtimeTests))];
    const tests = await runtimeTests(copy, files);
    expect(tests.failures).toEqual([]);
    expect(tests.passed).toBeGreaterThan(0);
  }, 300_000);
});

describe.each(MUTATIONS)('mutant $name', (mutation) => {
  it(`fails the crash harness on ${mutation.caughtBy.metric} and a runtime test`, async () => {
    const copy = await built(mutation);
    const crash = await crashTest(copy, KILLS);
    expect(crash.exitCode, mutation.breaks).toBe(1);
    expect(crash.report.goal_met).toBe(false);
    expect(crash.report.kills_not_fired).toBe(0);
    expect(
      mutation.caughtBy.caught(crash.report),
      `${mutation.caughtBy.metric}: ${JSON.stringify(crash.report.failures)}`,
    ).toBe(true);
    const tests = await runtimeTests(copy, mutation.runtimeTests);
    expect(tests.failed, mutation.breaks).toBeGreaterThan(0);
  }, 300_000);
});
