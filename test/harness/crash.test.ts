import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { runCrashTest } from '../../src/harness/crash/run.js';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'crash-test-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it('recovers deploy_pipeline from real SIGKILLs on SQLite: 100% recovered, 100% identical, 0 duplicates', async () => {
  const lines: string[] = [];
  const reportPath = join(dir, 'reports/crash.json');
  const { report, scenarios, markdown } = await runCrashTest({
    storeUrl: `sqlite:${join(dir, 'crash.db')}`,
    plans: [
      // inside tool calls: after the side effect but before the tool's ledger line; after the ledger line but
      // before the runtime records the result
      ['tool:deploy.run_tests:effect_done'],
      ['tool:deploy.build:ledger_written'],
      // step boundaries: before a checkpointed commit reaches the store, and right after one
      ['commit:2:after'],
      ['commit:9:before'],
    ],
    reportPath,
    onProgress: (line) => lines.push(line),
  });
  expect(report.kills).toBe(4);
  expect(report.kills_inside_tool_calls).toBe(2);
  expect(report.kills_at_step_boundaries).toBe(2);
  expect(scenarios.map((s) => s.killed_at)).toEqual(scenarios.map((s) => s.plan));
  expect(scenarios.every((s) => s.resume_ms.length === 1)).toBe(true);
  expect(report.recovered_rate).toBe(1);
  expect(report.identical_output_rate).toBe(1);
  expect(report.duplicate_side_effects).toBe(0);
  expect(report.reference_points).toBeGreaterThanOrEqual(5 * 3 + 10 * 2);
  expect(lines.some((line) => line.startsWith('[4/4] killed at commit:9:before'))).toBe(true);
  expect(JSON.parse(readFileSync(reportPath, 'utf8'))).toMatchObject({ kills: 4, duplicate_side_effects: 0 });
  expect(existsSync(join(dir, 'reports/crash.md'))).toBe(true);
  expect(markdown).toContain('**met**');
}, 300_000);
