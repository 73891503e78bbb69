/** The crash report: figures as JSON, and the same as a short Markdown summary. */
import { canonicalJson, type JsonValue } from '../../core/json.js';

export interface ScenarioResult {
  /** The kill points asked for, run after run. */
  readonly plan: string[];
  /** Kill points a real SIGKILL happened at. */
  readonly killed_at: string[];
  /** Child processes started (kills + the final run). */
  readonly runs: number;
  /** Planned kill points that never fired (the run went past where it was to die): a failure. */
  readonly kills_not_fired: string[];
  readonly recovered: boolean;
  readonly identical_output: boolean;
  /** Counted in the downstream's effect log, per logical step, whatever the key (effect-check.ts). */
  readonly duplicate_side_effects: number;
  readonly redundant_calls: number;
  readonly missing_effects: number;
  readonly unexpected_effects: number;
  readonly unmatched_keys: number;
  readonly effect_log_lines: number;
  readonly effect_problems: string[];
  /** For each resumed run: ms from calling resume to the first new write (or to the end when none). */
  readonly resume_ms: number[];
  readonly error: string | null;
}

export interface CrashReport {
  /** The agent under test (`deploy_pipeline`, `tool_loop (plain)`). */
  readonly agent: string;
  readonly store: string;
  readonly kills: number;
  readonly runs: number;
  readonly scenarios: number;
  readonly recovered: number;
  readonly recovered_rate: number;
  readonly identical_output: number;
  readonly identical_output_rate: number;
  readonly duplicate_side_effects: number;
  readonly redundant_calls: number;
  /** The effect logs checked: every logical step of the reference exactly once, under its action's key. */
  readonly effect_log: {
    readonly scenarios_checked: number;
    readonly lines: number;
    readonly expected_steps: number;
    readonly missing_effects: number;
    readonly unexpected_effects: number;
    readonly unmatched_keys: number;
  };
  readonly kills_planned: number;
  readonly kills_not_fired: number;
  readonly kills_at_step_boundaries: number;
  readonly kills_inside_tool_calls: number;
  readonly resume_ms_p50: number;
  readonly resume_ms_max: number;
  readonly reference_points: number;
  readonly elapsed_ms: number;
  readonly goal_met: boolean;
  readonly failures: { readonly plan: string[]; readonly error: string | null; readonly effects: string[] }[];
}

const ID = /\b(sess|task|act|ckpt|evt|msg|run)_[a-z2-7]{26}\b/g;

/**
 * The output with every generated id replaced by its kind and order of appearance (`<task#1>`), so a run
 * compares equal to the reference, which has other ids, exactly when everything else is equal.
 */
export function normalizeOutput(output: JsonValue): string {
  const seen = new Map<string, string>();
  const counts = new Map<string, number>();
  return canonicalJson(output).replace(ID, (id, kind: string) => {
    let name = seen.get(id);
    if (name === undefined) {
      const n = (counts.get(kind) ?? 0) + 1;
      counts.set(kind, n);
      name = `<${kind}#${n}>`;
      seen.set(id, name);
    }
    return name;
  });
}

export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index] ?? 0;
}

const round = (ms: number) => Math.round(ms * 10) / 10;

function sum<T>(items: readonly T[], of: (item: T) => number): number {
  return items.reduce((total, item) => total + of(item), 0);
}

/** True when the scenario shows anything wrong. */
export function failed(s: ScenarioResult): boolean {
  return (
    !s.recovered ||
    !s.identical_output ||
    s.duplicate_side_effects > 0 ||
    s.redundant_calls > 0 ||
    s.effect_problems.length > 0 ||
    s.kills_not_fired.length > 0
  );
}

export function summarize(
  store: string,
  scenarios: readonly ScenarioResult[],
  reference: { readonly points: number; readonly steps: number },
  elapsedMs: number,
  agent = 'deploy_pipeline',
): CrashReport {
  const kills = scenarios.flatMap((s) => s.killed_at);
  const resumes = scenarios.flatMap((s) => s.resume_ms);
  const recovered = scenarios.filter((s) => s.recovered).length;
  const identical = scenarios.filter((s) => s.identical_output).length;
  const n = Math.max(1, scenarios.length);
  return {
    agent,
    store,
    kills: kills.length,
    runs: scenarios.reduce((sum, s) => sum + s.runs, 0),
    scenarios: scenarios.length,
    recovered,
    recovered_rate: recovered / n,
    identical_output: identical,
    identical_output_rate: identical / n,
    duplicate_side_effects: sum(scenarios, (s) => s.duplicate_side_effects),
    redundant_calls: sum(scenarios, (s) => s.redundant_calls),
    effect_log: {
      scenarios_checked: scenarios.length,
      lines: sum(scenarios, (s) => s.effect_log_lines),
      expected_steps: reference.steps,
      missing_effects: sum(scenarios, (s) => s.missing_effects),
      unexpected_effects: sum(scenarios, (s) => s.unexpected_effects),
      unmatched_keys: sum(scenarios, (s) => s.unmatched_keys),
    },
    kills_planned: sum(scenarios, (s) => s.plan.length),
    kills_not_fired: sum(scenarios, (s) => s.kills_not_fired.length),
    kills_at_step_boundaries: kills.filter((k) => k.startsWith('commit:')).length,
    kills_inside_tool_calls: kills.filter((k) => k.startsWith('tool:')).length,
    resume_ms_p50: round(percentile(resumes, 50)),
    resume_ms_max: round(Math.max(0, ...resumes)),
    reference_points: reference.points,
    elapsed_ms: Math.round(elapsedMs),
    goal_met: scenarios.length > 0 && !scenarios.some(failed),
    failures: scenarios
      .filter(failed)
      .map((s) => ({ plan: s.plan, error: s.error, effects: s.effect_problems })),
  };
}

const pct = (rate: number) => `${(rate * 100).toFixed(1)}%`;

export function toMarkdown(report: CrashReport): string {
  const ok = report.goal_met;
  const e = report.effect_log;
  const lines = [
    `# Crash test: ${report.agent} on \`${report.store}\``,
    '',
    `Goal 100% recovered / 100% identical / 0 duplicate effects / 0 redundant calls / every planned kill fired: **${ok ? 'met' : 'NOT met'}**.`,
    '',
    '| figure | value |',
    '| --- | --- |',
    `| SIGKILLs | ${report.kills} (${report.kills_at_step_boundaries} at step boundaries, ${report.kills_inside_tool_calls} inside tool calls) |`,
    `| planned kills that never fired | ${report.kills_not_fired} of ${report.kills_planned} |`,
    `| child processes | ${report.runs} in ${report.scenarios} interrupted runs |`,
    `| recovered | ${report.recovered}/${report.scenarios} (${pct(report.recovered_rate)}) |`,
    `| identical output | ${report.identical_output}/${report.scenarios} (${pct(report.identical_output_rate)}) |`,
    `| duplicate side effects (the downstream's effect log, per logical step, any key) | ${report.duplicate_side_effects} |`,
    `| redundant calls (a call for a step already done) | ${report.redundant_calls} |`,
    `| effect logs checked | ${e.scenarios_checked} logs, ${e.lines} lines; ${e.expected_steps} steps each: ${e.missing_effects} missing, ${e.unexpected_effects} unexpected, ${e.unmatched_keys} under a key no action holds |`,
    `| time to resume p50 / max | ${report.resume_ms_p50} ms / ${report.resume_ms_max} ms |`,
    `| kill points in the reference run | ${report.reference_points} |`,
    `| elapsed | ${(report.elapsed_ms / 1000).toFixed(1)} s |`,
  ];
  if (report.failures.length > 0) {
    lines.push('', '## Failures', '');
    for (const f of report.failures) {
      const effects = f.effects.length > 0 ? `; effects: ${f.effects.join('; ')}` : '';
      lines.push(`- kills at ${f.plan.join(' -> ')}: ${f.error ?? 'output differs'}${effects}`);
    }
  }
  return `${lines.join('\n')}\n`;
}
