/**
 * The crash harness at a small size, on SQLite and PostgreSQL: real SIGKILLs chosen by the planner (single
 * kills at tool calls and step boundaries, and a double kill that kills a recovery too), effects counted in
 * the deploy tools' own effect log, and a planned kill that never fires reported as a failure.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCrashTest } from '../../src/harness/crash/run.js';
import { dropSchema, randomSchema, schemaUrl } from '../store/postgres-env.js';

let dir: string;
const schema = randomSchema();
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'crash-test-'));
});
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await dropSchema(schema);
});

const stores = [
  ['SQLite', () => `sqlite:${join(dir, 'crash.db')}`],
  ['PostgreSQL', () => schemaUrl(schema)],
] as const;

describe.each(stores)('crash harness on %s', (name, url) => {
  it('6 kills with a double kill: 100% recovered, identical, 0 duplicate effects, 0 redundant calls', async () => {
    const lines: string[] = [];
    const reportPath = join(dir, `reports/crash-${name}.json`);
    const { report, scenarios, markdown } = await runCrashTest({
      storeUrl: url(),
      kills: 6,
      reportPath,
      onProgress: (line) => lines.push(line),
    });
    expect(report.kills).toBe(6);
    expect(report.kills_not_fired).toBe(0);
    expect(scenarios.some((s) => s.killed_at.length === 2)).toBe(true);
    expect(report.kills_inside_tool_calls).toBeGreaterThanOrEqual(3);
    expect(report.kills_at_step_boundaries).toBeGreaterThanOrEqual(2);
    expect(scenarios.map((s) => s.killed_at)).toEqual(scenarios.map((s) => s.plan));
    expect(report.recovered_rate).toBe(1);
    expect(report.identical_output_rate).toBe(1);
    expect(report.duplicate_side_effects).toBe(0);
    expect(report.redundant_calls).toBe(0);
    // Every scenario's effect log was read and held each of the 5 steps exactly once, under its action's key.
    expect(report.effect_log).toMatchObject({
      scenarios_checked: scenarios.length,
      expected_steps: 5,
      missing_effects: 0,
      unexpected_effects: 0,
      unmatched_keys: 0,
    });
    expect(report.effect_log.lines).toBeGreaterThanOrEqual(scenarios.length * 10);
    expect(report.reference_points).toBeGreaterThanOrEqual(5 * 2 + 10 * 2);
    expect(report.goal_met).toBe(true);
    expect(lines.at(-1)).toContain('goal met');
    expect(JSON.parse(readFileSync(reportPath, 'utf8'))).toMatchObject({
      kills: 6,
      duplicate_side_effects: 0,
    });
    expect(existsSync(join(dir, `reports/crash-${name}.md`))).toBe(true);
    expect(markdown).toContain('**met**');
  }, 300_000);
});

it('reports a planned kill that never fires as a failure, not as a pass', async () => {
  const { report, markdown } = await runCrashTest({
    storeUrl: `sqlite:${join(dir, 'unfired.db')}`,
    plans: [['tool:deploy.build:effect_done'], ['tool:deploy.no_such_step:effect_done']],
  });
  expect(report).toMatchObject({ kills: 1, kills_planned: 2, kills_not_fired: 1, goal_met: false });
  expect(report.recovered_rate).toBe(1);
  expect(report.failures).toEqual([
    {
      plan: ['tool:deploy.no_such_step:effect_done'],
      error: 'the planned kill at tool:deploy.no_such_step:effect_done never fired',
      effects: [],
    },
  ]);
  expect(markdown).toContain('**NOT met**');
  expect(markdown).toContain('planned kills that never fired | 1 of 2');
}, 300_000);
