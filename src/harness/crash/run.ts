/**
 * The crash harness (SPEC 7): `deploy_pipeline` in a child process, SIGKILLed at step boundaries and inside
 * tool calls, resumed with the same session id until it completes; compared with an uninterrupted reference.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { AgentStateError, invalidRequest } from '../../core/errors.js';
import { newId } from '../../core/ids.js';
import type { JsonValue } from '../../core/json.js';
import { deployWorkspace } from '../../demo/deploy/workspace.js';
import { makeFolder } from '../../process/folders.js';
import { checkEffects, referenceSteps } from './effect-check.js';
import { expectedOutput } from './expected.js';
import { planKills } from './plan.js';
import type { ActionKey, ChildEvent } from './points.js';
import { type CrashReport, normalizeOutput, type ScenarioResult, summarize, toMarkdown } from './report.js';
import { type ChildRun, runChild } from './spawn-child.js';

export interface CrashTestOptions {
  /** The store every child process opens, for example `sqlite:/tmp/crash.db`. */
  readonly storeUrl: string;
  /** How many SIGKILLs (at least); ignored when `plans` is given. Default 20. */
  readonly kills?: number;
  /** Explicit kill plans (each the kill point of successive runs of one pipeline), instead of `kills`. */
  readonly plans?: readonly (readonly string[])[];
  /** Where to write the JSON report; a `.md` summary is written next to it. */
  readonly reportPath?: string;
  /** One line per event while it runs. */
  readonly onProgress?: (line: string) => void;
  /** Where workspaces go; a temporary directory (removed at the end) by default. */
  readonly workDir?: string;
  readonly tenantId?: string;
  /** The agent under test and how its children run (default: `deploy_pipeline`, `deploySubject`). */
  readonly subject?: CrashSubject;
}

/** One chain's child, as the subject starts it. */
export interface ChainChild {
  readonly storeUrl: string;
  readonly sessionId: string;
  /** The chain's own folder: its workspace, its downstreams' ledgers and effect logs. */
  readonly workspaceDir: string;
  readonly tenantId: string;
  readonly userId: string;
  readonly leaseOwner: string;
  readonly crashAt: string | null;
}

/**
 * What the harness runs: the agent's child process, where its downstreams keep their effect logs, and how
 * its output is compared. Everything else (the kill plan, the chains, the effect check, the report) is
 * the harness's own, the same for every agent.
 */
export interface CrashSubject {
  /** The agent's name in the report, for example `deploy_pipeline` or `tool_loop (plain)`. */
  readonly agent: string;
  runChild(child: ChainChild): Promise<ChildRun>;
  /** The effect logs a chain's downstreams wrote (each logical step in one of them). */
  effectLogs(workspaceDir: string): string[];
  /** The output a scenario must end with (default `expectedOutput`). */
  expected?(reference: JsonValue, killedAt: readonly string[], referencePoints: readonly string[]): JsonValue;
  /** The output as compared (default `normalizeOutput`). */
  normalize?(output: JsonValue): string;
  /** Stops what the subject started (downstream services, a model server). */
  close?(): Promise<void>;
}

/** The `deploy_pipeline` agent: its child (child.ts) and the deploy tools' effect log in its workspace. */
export const deploySubject: CrashSubject = {
  agent: 'deploy_pipeline',
  runChild: (child) => runChild(child),
  effectLogs: (dir) => [deployWorkspace(dir).effectsPath],
};

export interface CrashTestResult {
  readonly report: CrashReport;
  readonly markdown: string;
  readonly scenarios: ScenarioResult[];
}

interface Env {
  readonly subject: CrashSubject;
  readonly storeUrl: string;
  readonly workDir: string;
  readonly tenantId: string;
  readonly userId: string;
}

interface Chain {
  readonly runs: ChildRun[];
  readonly output: JsonValue | null;
  readonly keys: ActionKey[] | null;
  /** Planned kill points that never fired. */
  readonly unfired: string[];
  readonly error: string | null;
}

function doneEvent(run: ChildRun): Extract<ChildEvent, { event: 'done' }> | null {
  return run.events.find((e): e is Extract<ChildEvent, { event: 'done' }> => e.event === 'done') ?? null;
}

/**
 * The child's own one-line error in its stderr: the `Name: message` line of an uncaught error (the line
 * before its stack), else the last line that is not Node's version footer or a stack frame.
 */
export function childErrorLine(stderr: string): string {
  const lines = stderr
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '');
  const named = lines.find((line) => /^[A-Z][A-Za-z]*(Error|Exception)(\s*\[[^\]]*\])?: /.test(line));
  if (named !== undefined) return named.replace(/^[A-Z][A-Za-z]*(Error|Exception)(\s*\[[^\]]*\])?: /, '');
  const plain = lines.filter(
    (line) => !/^at /.test(line) && !/^Node\.js v\d/.test(line) && !/^[{}]/.test(line) && line !== '^',
  );
  return plain.at(-1) ?? 'no error message';
}

function describeEnd(run: ChildRun): string {
  const error = run.events.find((e) => e.event === 'error' || e.event === 'conflict') as
    | { message: string }
    | undefined;
  const how = run.signal !== null ? `signal ${run.signal}` : `exit code ${run.exitCode}`;
  return `${how}: ${error?.message ?? childErrorLine(run.stderr)}`;
}

/**
 * Whether a child process can open the store again after the one before it was killed: not a store that
 * lives inside one process (`memory:`, `sqlite::memory:`, `sqlite:file:` URIs).
 */
export function assertReopenable(storeUrl: string): void {
  const sqlite = storeUrl.startsWith('sqlite:') ? storeUrl.slice('sqlite:'.length) : null;
  if (storeUrl.startsWith('memory:') || sqlite === ':memory:' || sqlite?.startsWith('file:') === true) {
    throw invalidRequest(
      `the crash test needs a store that a new process can open again; ${storeUrl} dies with each killed child`,
    );
  }
}

/**
 * Runs one pipeline to completion: one child per planned kill, then one without, all on one session. A
 * child that was to die at a point and ended without passing it is a failure of the scenario: the kill plan
 * did not test what it names.
 */
async function runChain(env: Env, name: string, plan: readonly string[]): Promise<Chain> {
  const sessionId = newId('session');
  const workspaceDir = join(env.workDir, name);
  const runs: ChildRun[] = [];
  for (let i = 0; i <= plan.length + 1; i++) {
    const run = await env.subject.runChild({
      storeUrl: env.storeUrl,
      sessionId,
      workspaceDir,
      tenantId: env.tenantId,
      userId: env.userId,
      leaseOwner: `crash-harness-${sessionId}`,
      crashAt: plan[i] ?? null,
    });
    runs.push(run);
    const planned = plan[i];
    if (run.signal === 'SIGKILL' && planned !== undefined) continue;
    const done = doneEvent(run);
    const unfired = planned === undefined ? [] : plan.slice(i);
    if (run.exitCode === 0 && done !== null) {
      const error = unfired.length === 0 ? null : `the planned kill at ${unfired.join(' -> ')} never fired`;
      return { runs, output: done.output as JsonValue, keys: done.keys, unfired, error };
    }
    return { runs, output: null, keys: null, unfired, error: describeEnd(run) };
  }
  return {
    runs,
    output: null,
    keys: null,
    unfired: [],
    error: 'the run did not complete after its planned kills',
  };
}

function lastPoint(run: ChildRun): string | null {
  for (let i = run.events.length - 1; i >= 0; i--) {
    const event = run.events[i];
    if (event?.event === 'point') return event.point;
  }
  return null;
}

export async function runCrashTest(options: CrashTestOptions): Promise<CrashTestResult> {
  const started = performance.now();
  const progress = options.onProgress ?? (() => {});
  assertReopenable(options.storeUrl);
  // A report path that cannot be written fails now, not after the whole run.
  if (options.reportPath !== undefined) makeFolder(dirname(options.reportPath), 'for the report');
  const ownWorkDir = options.workDir === undefined;
  const workDir = options.workDir ?? mkdtempSync(join(tmpdir(), 'agentstate-crash-'));
  const subject = options.subject ?? deploySubject;
  const normalize = subject.normalize ?? normalizeOutput;
  const expect = subject.expected ?? expectedOutput;
  const env: Env = {
    subject,
    storeUrl: options.storeUrl,
    workDir,
    tenantId: options.tenantId ?? 'crash-harness',
    userId: `crash-${newId('run').slice(4, 14)}`,
  };
  try {
    progress(`crash test of ${subject.agent} on ${options.storeUrl}: reference run (no kill)`);
    const reference = await runChain(env, 'reference', []);
    if (reference.output === null) {
      throw new AgentStateError('internal', `the reference run did not complete: ${reference.error}`);
    }
    const referencePoints = (reference.runs[0]?.events ?? [])
      .filter((e): e is Extract<ChildEvent, { event: 'point' }> => e.event === 'point')
      .map((e) => e.point);
    const steps = referenceSteps(subject.effectLogs(join(workDir, 'reference')));
    const plans = options.plans ?? planKills(referencePoints, options.kills ?? 20);
    progress(
      `reference passed ${referencePoints.length} kill points; ${plans.length} interrupted runs follow`,
    );

    const scenarios: ScenarioResult[] = [];
    for (const [index, plan] of plans.entries()) {
      const chain = await runChain(env, `run-${index + 1}`, plan);
      const killed = chain.runs.filter((r) => r.signal === 'SIGKILL').map((r) => lastPoint(r) ?? '?');
      const resumeMs = chain.runs.slice(1).flatMap((r) => {
        const event = r.events.find((e) => e.event === 'resumed') as { ms: number } | undefined;
        return event === undefined ? [] : [event.ms];
      });
      const effects = checkEffects(subject.effectLogs(join(workDir, `run-${index + 1}`)), steps, chain.keys);
      const expected = normalize(expect(reference.output, killed, referencePoints));
      const identical = chain.output !== null && normalize(chain.output) === expected;
      const result: ScenarioResult = {
        plan: [...plan],
        killed_at: killed,
        kills_not_fired: chain.unfired,
        runs: chain.runs.length,
        recovered: chain.output !== null,
        identical_output: identical,
        duplicate_side_effects: effects.duplicate_side_effects,
        redundant_calls: effects.redundant_calls,
        missing_effects: effects.missing_effects,
        unexpected_effects: effects.unexpected_effects,
        unmatched_keys: effects.unmatched_keys,
        effect_log_lines: effects.lines,
        effect_problems: effects.problems,
        resume_ms: resumeMs,
        error:
          chain.error ?? (identical || chain.output === null ? null : 'output differs from the reference'),
      };
      scenarios.push(result);
      const verdict = result.recovered
        ? identical
          ? 'identical'
          : 'DIFFERENT output'
        : `NOT recovered: ${chain.error}`;
      progress(
        `[${index + 1}/${plans.length}] killed at ${killed.join(' -> ') || '(no kill)'}; ` +
          `resumed in ${resumeMs.map((ms) => `${Math.round(ms)} ms`).join(', ') || '-'}; ${verdict}; ` +
          `duplicate effects ${result.duplicate_side_effects}, redundant calls ${result.redundant_calls}` +
          (effects.problems.length > 0 ? `; ${effects.problems.join('; ')}` : ''),
      );
    }
    const report = summarize(
      options.storeUrl,
      scenarios,
      { points: referencePoints.length, steps: steps.length },
      performance.now() - started,
      subject.agent,
    );
    const markdown = toMarkdown(report);
    if (options.reportPath !== undefined) {
      makeFolder(dirname(options.reportPath), 'for the report');
      writeFileSync(options.reportPath, `${JSON.stringify(report, null, 2)}\n`);
      writeFileSync(`${options.reportPath.replace(/\.json$/, '')}.md`, markdown);
    }
    progress(
      `done: ${report.kills} kills, recovered ${report.recovered}/${report.scenarios}, identical ${report.identical_output}/${report.scenarios}, duplicate effects ${report.duplicate_side_effects}, redundant calls ${report.redundant_calls}, goal ${report.goal_met ? 'met' : 'NOT met'}`,
    );
    return { report, markdown, scenarios };
  } finally {
    await subject.close?.();
    if (ownWorkDir) rmSync(workDir, { recursive: true, force: true });
  }
}
