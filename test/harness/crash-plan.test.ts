import { describe, expect, it } from 'vitest';
import { newId } from '../../src/core/ids.js';
import { planKills, plannedKills } from '../../src/harness/crash/plan.js';
import { normalizeOutput, percentile, summarize } from '../../src/harness/crash/report.js';

const tools = ['deploy.plan', 'deploy.build'];
const points = [
  'commit:1:before',
  'commit:1:after',
  ...tools.flatMap((t, i) => [
    `commit:${2 * i + 2}:before`,
    `commit:${2 * i + 2}:after`,
    `tool:${t}:before_effect`,
    `tool:${t}:effect_done`,
    `tool:${t}:ledger_written`,
    `commit:${2 * i + 3}:before`,
    `commit:${2 * i + 3}:after`,
  ]),
];

describe('kill plans', () => {
  it('spreads a few kills over tool-call points and step boundaries, deterministically', () => {
    const plans = planKills(points, 4);
    expect(plans).toEqual(planKills(points, 4));
    expect(plannedKills(plans)).toBe(4);
    const flat = plans.flat();
    expect(flat.filter((p) => p.startsWith('tool:'))).toHaveLength(2);
    expect(flat.filter((p) => p.startsWith('commit:'))).toHaveLength(2);
    expect(new Set(flat).size).toBe(4);
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
    const ok = {
      plan: ['commit:1:after'],
      killed_at: ['commit:1:after'],
      runs: 2,
      recovered: true,
      identical_output: true,
      duplicate_side_effects: 0,
      resume_ms: [10],
      error: null,
    };
    const bad = {
      ...ok,
      killed_at: ['tool:deploy.build:effect_done'],
      identical_output: false,
      duplicate_side_effects: 2,
      resume_ms: [30],
    };
    const report = summarize('memory:', [ok, bad], 20, 1234);
    expect(report).toMatchObject({
      kills: 2,
      runs: 4,
      recovered_rate: 1,
      identical_output_rate: 0.5,
      duplicate_side_effects: 2,
      kills_at_step_boundaries: 1,
      kills_inside_tool_calls: 1,
      resume_ms_max: 30,
    });
    expect(report.failures).toHaveLength(1);
  });
});
