import { describe, expect, it } from 'vitest';
import { newId } from '../../src/core/ids.js';
import { interruptedBeforeEffect } from '../../src/harness/crash/expected.js';
import { planKills, plannedKills } from '../../src/harness/crash/plan.js';
import {
  normalizeOutput,
  percentile,
  type ScenarioResult,
  summarize,
} from '../../src/harness/crash/report.js';

const tools = ['deploy.plan', 'deploy.write_files', 'deploy.build'];
const boundary = (n: number, method = 'commitTurn') => [
  `commit:${n}:${method}:before`,
  `commit:${n}:${method}:after`,
];
const points = [
  ...boundary(1, 'putCheckpoint'),
  ...tools.flatMap((t, i) => [
    ...boundary(2 * i + 2),
    `tool:${t}:before_effect`,
    `tool:${t}:effect_done`,
    ...boundary(2 * i + 3),
  ]),
];
const lastWriteBefore = 'commit:7:commitTurn:before';

describe('kill plans', () => {
  it('spreads a few kills over tool-call points and step boundaries, deterministically', () => {
    const plans = planKills(points, 3);
    expect(plans).toEqual(planKills(points, 3));
    expect(plannedKills(plans)).toBe(3);
    expect(plans.every((plan) => plan.length === 1)).toBe(true);
    const flat = plans.flat();
    expect(flat.filter((p) => p.startsWith('tool:'))).toHaveLength(2);
    expect(flat).toContain(lastWriteBefore);
  });

  it('from 4 kills on, a double kill of a call before its effect and of its recovery after it', () => {
    const plans = planKills(points, 6);
    expect(plannedKills(plans)).toBe(6);
    const doubles = plans.filter((plan) => plan.length === 2);
    expect(doubles).toEqual([
      ['tool:deploy.write_files:before_effect', 'tool:deploy.write_files:effect_done'],
    ]);
    const singles = plans.filter((plan) => plan.length === 1).flat();
    expect(singles).toContain(lastWriteBefore);
    expect(singles.some((p) => p.endsWith(':before_effect'))).toBe(true);
    expect(singles.some((p) => p.endsWith(':effect_done'))).toBe(true);
    expect(new Set(singles).size).toBe(singles.length);
  });

  it('20 kills: two double kills, one of each kind', () => {
    const plans = planKills(points, 20);
    expect(plannedKills(plans)).toBe(20);
    expect(plans.filter((plan) => plan.length === 2)).toEqual([
      ['tool:deploy.write_files:before_effect', 'tool:deploy.write_files:effect_done'],
      ['tool:deploy.write_files:effect_done', 'tool:deploy.build:before_effect'],
    ]);
  });

  it('uses every point once, then double kills, when more kills than points are asked', () => {
    const plans = planKills(points, points.length + 5);
    expect(plannedKills(plans)).toBeGreaterThanOrEqual(points.length + 5);
    expect(plans.slice(0, points.length).map((p) => p[0])).toEqual(points);
    const doubles = plans.filter((p) => p.length === 2);
    expect(doubles.length).toBeGreaterThan(0);
    for (const [, second] of doubles) expect(second).toMatch(/^tool:/);
  });
});

describe('expected attempts', () => {
  it('a kill after a call was begun and before its effect costs that call one attempt more', () => {
    expect(interruptedBeforeEffect('tool:deploy.build:before_effect', points)).toBe('deploy.build');
    // the write before the call landed: its action is PENDING, the call not made
    expect(interruptedBeforeEffect('commit:4:commitTurn:after', points)).toBe('deploy.write_files');
    expect(interruptedBeforeEffect('commit:4:commitTurn:before', points)).toBeNull();
    expect(interruptedBeforeEffect('tool:deploy.build:effect_done', points)).toBeNull();
    expect(interruptedBeforeEffect('commit:5:commitTurn:after', points)).toBeNull();
  });
});

describe('report', () => {
  it('compares outputs up to their generated ids', () => {
    const a = newId('task');
    const b = newId('task');
    const s = newId('session');
    expect(normalizeOutput({ task: a, text: `done ${a}`, session: s })).toBe(
      normalizeOutput({ session: newId('session'), text: `done ${b}`, task: b }),
    );
    expect(normalizeOutput({ task: a, other: a })).not.toBe(normalizeOutput({ task: a, other: b }));
    expect(normalizeOutput({ url: 'x/1' })).not.toBe(normalizeOutput({ url: 'x/2' }));
  });

  it('computes rates, duplicates and resume percentiles', () => {
    expect(percentile([5, 1, 3, 2, 4], 50)).toBe(3);
    expect(percentile([], 50)).toBe(0);
    const ok: ScenarioResult = {
      plan: ['commit:1:putCheckpoint:after'],
      killed_at: ['commit:1:putCheckpoint:after'],
      kills_not_fired: [],
      runs: 2,
      recovered: true,
      identical_output: true,
      duplicate_side_effects: 0,
      redundant_calls: 0,
      missing_effects: 0,
      unexpected_effects: 0,
      unmatched_keys: 0,
      effect_log_lines: 10,
      effect_problems: [],
      resume_ms: [10],
      error: null,
    };
    const bad: ScenarioResult = {
      ...ok,
      plan: ['tool:deploy.build:effect_done'],
      killed_at: ['tool:deploy.build:effect_done'],
      identical_output: false,
      duplicate_side_effects: 2,
      redundant_calls: 1,
      effect_problems: ['deploy.build x/y@1: 3 effects (keys a, a, a)'],
      resume_ms: [30],
    };
    const unfired: ScenarioResult = {
      ...ok,
      plan: ['tool:deploy.nope:effect_done'],
      killed_at: [],
      kills_not_fired: ['tool:deploy.nope:effect_done'],
    };
    const report = summarize('memory:', [ok, bad], { points: 20, steps: 5 }, 1234);
    expect(report).toMatchObject({
      kills: 2,
      runs: 4,
      recovered_rate: 1,
      identical_output_rate: 0.5,
      duplicate_side_effects: 2,
      redundant_calls: 1,
      effect_log: { scenarios_checked: 2, lines: 20, expected_steps: 5 },
      kills_at_step_boundaries: 1,
      kills_inside_tool_calls: 1,
      resume_ms_max: 30,
      goal_met: false,
    });
    expect(report.failures).toHaveLength(1);
    expect(report.failures[0]?.effects).toEqual(bad.effect_problems);
    expect(summarize('memory:', [ok], { points: 20, steps: 5 }, 1).goal_met).toBe(true);
    // A planned kill that never fired fails the goal, with everything else right.
    const missed = summarize('memory:', [ok, unfired], { points: 20, steps: 5 }, 1);
    expect(missed).toMatchObject({ goal_met: false, kills_planned: 2, kills_not_fired: 1 });
    expect(summarize('memory:', [], { points: 20, steps: 5 }, 1).goal_met).toBe(false);
  });
});
