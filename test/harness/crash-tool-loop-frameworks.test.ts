/**
 * The crash harness on the tool-loop agent written with the OpenAI Agents SDK (agentstate/openai-agents)
 * and with LangGraph.js (agentstate/langgraph), at a small size on SQLite and PostgreSQL: the scripted model
 * behind a real Chat Completions server on loopback, the demo airline over HTTP and a payment downstream
 * that does not deduplicate, real SIGKILLs at step boundaries and inside tool calls, effects counted in the
 * downstreams' effect logs. Then broken copies of the adapters (built as the runtime mutants are) run
 * through `agentstate crashtest --agent tool_loop`: each must fail it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCrashTest } from '../../src/harness/crash/run.js';
import { toolLoopSubject } from '../../src/harness/crash/tool-loop/subject.js';
import { dropSchema, randomSchema, schemaUrl } from '../store/postgres-env.js';
import { type BuiltCopy, buildCopy, crashTest } from './mutants/build.js';

let dir: string;
const schema = randomSchema();
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'crash-tool-loop-fw-'));
});
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await dropSchema(schema);
});

const stores = [
  ['openai-agents', 'SQLite', () => `sqlite:${join(dir, 'crash-openai-agents.db')}`],
  ['openai-agents', 'PostgreSQL', () => schemaUrl(schema)],
  ['langgraph', 'SQLite', () => `sqlite:${join(dir, 'crash-langgraph.db')}`],
  ['langgraph', 'PostgreSQL', () => schemaUrl(schema)],
] as const;

describe.each(stores)('the tool-loop crash test (%s) on %s', (framework, name, url) => {
  it('4 kills with a double kill: 100% recovered, identical, 0 duplicate effects, 0 redundant calls', async () => {
    const lines: string[] = [];
    const { report, scenarios, markdown } = await runCrashTest({
      storeUrl: url(),
      kills: 4,
      reportPath: join(dir, `reports/crash-tool-loop-${framework}-${name}.json`),
      subject: await toolLoopSubject(framework),
      onProgress: (line) => lines.push(line),
    });
    expect(report.failures).toEqual([]);
    expect(report).toMatchObject({
      agent: `tool_loop (${framework})`,
      kills: 4,
      kills_not_fired: 0,
      recovered_rate: 1,
      identical_output_rate: 1,
      duplicate_side_effects: 0,
      redundant_calls: 0,
      goal_met: true,
    });
    expect(scenarios.some((s) => s.killed_at.length === 2)).toBe(true);
    expect(report.kills_inside_tool_calls).toBeGreaterThanOrEqual(2);
    expect(report.kills_at_step_boundaries).toBeGreaterThanOrEqual(1);
    // The booking (airline) and the charge (payments): each run's two logs read, each step exactly once.
    expect(report.effect_log).toMatchObject({
      scenarios_checked: scenarios.length,
      expected_steps: 2,
      missing_effects: 0,
      unexpected_effects: 0,
      unmatched_keys: 0,
    });
    expect(report.effect_log.lines).toBeGreaterThanOrEqual(scenarios.length * 4);
    expect(lines[0]).toContain(`tool_loop (${framework})`);
    expect(markdown).toContain(`# Crash test: tool_loop (${framework})`);
  }, 300_000);
});

type Figures = {
  recovered: number;
  scenarios: number;
  redundant_calls: number;
  duplicate_side_effects: number;
  effect_log: { unmatched_keys: number };
};

/** Broken copies of the adapters: the text change, and what must show it. */
const BROKEN = [
  {
    name: 'openai-agents-tools-without-lookup',
    framework: 'openai-agents',
    file: 'src/adapters/openai-agents/durable.ts',
    breaks: 'durableTools drops the lookup it was given: a call cut short by a kill is left UNKNOWN',
    find: '            ...(lookup === undefined ? {} : { lookup }),\n',
    replace: '',
    caught: (r: Figures) => r.recovered < r.scenarios,
  },
  {
    name: 'langgraph-tools-without-lookup',
    framework: 'langgraph',
    file: 'src/adapters/langgraph/durable.ts',
    breaks: 'durableTools drops the lookup it was given: a call cut short by a kill is left UNKNOWN',
    find: '          ...(lookup === undefined ? {} : { lookup }),\n',
    replace: '',
    caught: (r: Figures) => r.recovered < r.scenarios,
  },
  {
    name: 'langgraph-key-not-passed-on',
    framework: 'langgraph',
    file: 'src/adapters/langgraph/durable.ts',
    breaks: "the tool is given a key of its own, not the action's: lookup never finds its effect",
    find: 'configurable: { ...rest.configurable, [KEY]: key },',
    replace: "configurable: { ...rest.configurable, [KEY]: key + ':' + Date.now() },",
    caught: (r: Figures) => r.redundant_calls + r.duplicate_side_effects + r.effect_log.unmatched_keys > 0,
  },
] as const;

const TOOL_LOOP = (framework: string) => ['--agent', 'tool_loop', '--framework', framework];
const copies: BuiltCopy[] = [];
afterAll(() => {
  for (const copy of copies) copy.remove();
});

describe('broken copies of the OpenAI Agents and LangGraph adapters', () => {
  it('the unchanged copy, built the same way, meets the goal (openai-agents and langgraph)', async () => {
    const copy = await buildCopy(null);
    copies.push(copy);
    for (const framework of ['openai-agents', 'langgraph']) {
      const crash = await crashTest(copy, 4, TOOL_LOOP(framework));
      expect(crash.report.failures).toEqual([]);
      expect(crash.report).toMatchObject({ goal_met: true, kills: 4 });
      expect(crash.exitCode).toBe(0);
    }
  }, 300_000);

  it.each(BROKEN)(
    '$name fails the crash test',
    async (broken) => {
      const copy = await buildCopy({
        name: broken.name,
        breaks: broken.breaks,
        edits: [{ file: broken.file, find: broken.find, replace: broken.replace }],
        runtimeTests: [],
        caughtBy: { metric: '', caught: () => true },
      });
      copies.push(copy);
      const crash = await crashTest(copy, 4, TOOL_LOOP(broken.framework));
      expect(crash.exitCode, broken.breaks).toBe(1);
      expect(crash.report.goal_met).toBe(false);
      expect(broken.caught(crash.report), JSON.stringify(crash.report.failures)).toBe(true);
    },
    300_000,
  );
});
