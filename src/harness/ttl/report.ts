/** The expiry report: figures as JSON, and a Markdown summary with a chart of what remained over time. */

export interface TtlSample {
  /** Seconds since the sessions went idle. */
  readonly t_s: number;
  /** Sessions of the run still stored (expired or not). */
  readonly stored: number;
}

export interface TtlReport {
  readonly store: string;
  readonly adapter: string;
  readonly sessions: number;
  readonly messages_per_session: number;
  readonly ttl_s: number;
  readonly wait_s: number;
  readonly sweep_interval_ms: number;
  /** Sessions of the run still stored at the end, counted in the store itself. */
  readonly residual: number;
  readonly residual_pct: number;
  readonly residual_messages: number;
  /** Seconds after going idle when no session of the run was stored any more (null: never). */
  readonly all_gone_at_s: number | null;
  readonly baseline_bytes: number;
  readonly peak_bytes: number;
  readonly after_bytes: number;
  /** (after - baseline) / baseline, in percent. */
  readonly after_vs_baseline_pct: number;
  /** Share of what the sessions added (peak - baseline) that was given back, in percent. */
  readonly reclaimed_pct: number;
  readonly create_ms: number;
  readonly sweeps: number;
  readonly swept: number;
  readonly goal_residual_met: boolean;
  readonly goal_storage_met: boolean;
  readonly extra_before: Record<string, number>;
  readonly extra_after: Record<string, number>;
  readonly samples: TtlSample[];
  readonly measured: string;
}

const BARS = ' ▁▂▃▄▅▆▇█';

function chart(samples: readonly TtlSample[], max: number): string {
  return samples.map((s) => BARS[Math.round((s.stored / Math.max(1, max)) * (BARS.length - 1))]).join('');
}

const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;

export function ttlMarkdown(r: TtlReport): string {
  const tick = (ok: boolean) => (ok ? 'met' : 'NOT met');
  return [
    `# Expiry test: ${r.adapter}`,
    '',
    `${r.sessions} sessions x ${r.messages_per_session} messages, TTL ${r.ttl_s} s, idle, counted after ${r.wait_s} s;`,
    `the sweeper ran in-process every ${r.sweep_interval_ms / 1000} s (${r.sweeps} sweeps, ${r.swept} sessions deleted).`,
    '',
    '| figure | value |',
    '| --- | --- |',
    `| store | \`${r.store}\` |`,
    `| residual sessions | ${r.residual} (${r.residual_pct.toFixed(2)} %), goal <= 2 %: ${tick(r.goal_residual_met)} |`,
    `| residual messages | ${r.residual_messages} |`,
    `| all gone after | ${r.all_gone_at_s === null ? 'never' : `${r.all_gone_at_s} s idle`} |`,
    `| storage baseline / peak / after | ${kb(r.baseline_bytes)} / ${kb(r.peak_bytes)} / ${kb(r.after_bytes)} |`,
    `| after vs baseline | ${r.after_vs_baseline_pct.toFixed(1)} %, goal within 10 % (of the growth, on an empty store): ${tick(r.goal_storage_met)} |`,
    `| reclaimed of what the sessions added | ${r.reclaimed_pct.toFixed(1)} % |`,
    `| creating the sessions took | ${r.create_ms} ms |`,
    '',
    `Sessions stored while idle (one bar per sample, 0 to ${r.wait_s} s):`,
    '',
    `    ${chart(r.samples, r.sessions)}`,
    '',
    `Measured ${r.measured}.`,
    '',
  ].join('\n');
}
