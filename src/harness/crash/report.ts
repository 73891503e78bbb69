/** The crash report: figures as JSON, and the same as a short Markdown summary. */
import { canonicalJson, type JsonValue } from '../../core/json.js';

export interface ScenarioResult {
  /** The kill points asked for, run after run. */
  readonly plan: string[];
  /** Kill points a real SIGKILL happened at. */
  readonly killed_at: string[];
  /** Child processes started (kills + the final run). */
  readonly runs: number;
  readonly recovered: boolean;
  readonly identical_output: boolean;
  readonly duplicate_side_effects: number;
  /** For each resumed run: ms from calling resume to the first new write (or to the end when none). */
  readonly resume_ms: number[];
  readonly error: string | null;
}

export interface CrashReport {
  readonly store: string;
  readonly kills: number;
  readonly runs: number;
  readonly scenarios: number;
  readonly recovered: number;
  readonly recovered_rate: number;
  readonly identical_output: number;
  readonly identical_output_rate: number;
  readonly duplicate_side_effects: number;
  readonly kills_at_step_boundaries: number;
  readonly kills_inside_tool_calls: number;
  readonly resume_ms_p50: number;
  readonly resume_ms_max: number;
  readonly reference_points: number;
  readonly elapsed_ms: number;
  readonly failures: { readonly plan: string[]; readonly error: string | null }[];
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

export function summarize(
  store: string,
  scenarios: readonly ScenarioResult[],
  referencePoints: number,
  elapsedMs: number,
): CrashReport {
  const kills = scenarios.flatMap((s) => s.killed_at);
  const resumes = scenarios.flatMap((s) => s.resume_ms);
  const recovered = scenarios.filter((s) => s.recovered).length;
  const identical = scenarios.filter((s) => s.identical_output).length;
  const n = Math.max(1, scenarios.length);
  return {
    store,
    kills: kills.length,
    runs: scenarios.reduce((sum, s) => sum + s.runs, 0),
    scenarios: scenarios.length,
    recovered,
    recovered_rate: recovered / n,
    identical_output: identical,
    identical_output_rate: identical / n,
    duplicate_side_effects: scenarios.reduce((sum, s) => sum + s.duplicate_side_effects, 0),
    kills_at_step_boundaries: kills.filter((k) => k.startsWith('commit:')).length,
    kills_inside_tool_calls: kills.filter((k) => k.startsWith('tool:')).length,
    resume_ms_p50: round(percentile(resumes, 50)),
    resume_ms_max: round(Math.max(0, ...resumes)),
    reference_points: referencePoints,
    elapsed_ms: Math.round(elapsedMs),
    failures: scenarios
      .filter((s) => !s.recovered || !s.identical_output || s.duplicate_side_effects > 0)
      .map((s) => ({ plan: s.plan, error: s.error })),
  };
}

const pct = (rate: number) => `${(rate * 100).toFixed(1)}%`;

export function toMarkdown(report: CrashReport): string {
  const ok =
    report.recovered_rate === 1 && report.identical_output_rate === 1 && report.duplicate_side_effects === 0;
  const lines = [
    `# Crash test: deploy_pipeline on \`${report.store}\``,
    '',
    `Goal 100% / 100% / 0: **${ok ? 'met' : 'NOT met'}**.`,
    '',
    '| figure | value |',
    '| --- | --- |',
    `| SIGKILLs | ${report.kills} (${report.kills_at_step_boundaries} at step boundaries, ${report.kills_inside_tool_calls} inside tool calls) |`,
    `| child processes | ${report.runs} in ${report.scenarios} interrupted runs |`,
    `| recovered | ${report.recovered}/${report.scenarios} (${pct(report.recovered_rate)}) |`,
    `| identical output | ${report.identical_output}/${report.scenarios} (${pct(report.identical_output_rate)}) |`,
    `| duplicate side effects (tools' own ledger) | ${report.duplicate_side_effects} |`,
    `| time to resume p50 / max | ${report.resume_ms_p50} ms / ${report.resume_ms_max} ms |`,
    `| kill points in the reference run | ${report.reference_points} |`,
    `| elapsed | ${(report.elapsed_ms / 1000).toFixed(1)} s |`,
  ];
  if (report.failures.length > 0) {
    lines.push('', '## Failures', '');
    for (const f of report.failures)
      lines.push(`- kills at ${f.plan.join(' -> ')}: ${f.error ?? 'output differs'}`);
  }
  return `${lines.join('\n')}\n`;
}
