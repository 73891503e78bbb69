/** The benchmark's report: ratios between systems, the JSON document and its Markdown rendering. */
import type { OpStats } from './measure.js';
import type { BenchSize, SystemResult } from './run.js';

export type Operation = 'put' | 'latest' | 'history';
export const OPERATIONS: readonly Operation[] = ['put', 'latest', 'history'];

export interface Ratio {
  readonly operation: Operation;
  readonly agentstate: string;
  readonly versus: string;
  /** agentstate ops/s divided by the other system's ops/s: above 1 means agentstate is faster. */
  readonly ops_per_s: number;
  /** agentstate p99 divided by the other's: below 1 means agentstate's tail is shorter. */
  readonly p99: number;
  /** agentstate bytes per checkpoint divided by the other's: below 1 means agentstate stores less. */
  readonly bytes_per_checkpoint: number | null;
}

export interface BenchReport {
  readonly benchmark: 'checkpoints';
  readonly version: 1;
  readonly started_at: string;
  readonly finished_at: string;
  readonly environment: {
    readonly node: string;
    readonly platform: string;
    readonly cpus: number;
    readonly cpu: string;
    /** Other work on the machine skews the figures: the 1-minute load average before and after. */
    readonly load_average_1m: { readonly before: number; readonly after: number };
  };
  readonly size: string;
  readonly config: BenchSize & {
    readonly repeat: number;
    readonly puts: number;
    readonly sqlite_synchronous: string;
    readonly journal_mode: 'WAL';
  };
  readonly payload: {
    readonly initial_state_bytes: number;
    readonly final_state_bytes: number;
    readonly mean_state_bytes: number;
  };
  readonly systems: readonly SystemResult[];
  readonly ratios: readonly Ratio[];
}

function div(a: number, b: number): number {
  return b === 0 ? 0 : Math.round((a / b) * 1000) / 1000;
}

/** agentstate against LangGraph and against the raw driver, on the same backend and at the same concurrency. */
export function ratios(systems: readonly SystemResult[]): Ratio[] {
  const out: Ratio[] = [];
  const ok = systems.filter((s) => s.ops !== null);
  for (const ours of ok.filter((s) => s.family === 'agentstate')) {
    const peers = ok.filter(
      (s) => s.family !== 'agentstate' && s.backend === ours.backend && s.concurrency === ours.concurrency,
    );
    for (const other of peers) {
      for (const operation of OPERATIONS) {
        const a = ours.ops?.[operation] as OpStats;
        const b = other.ops?.[operation] as OpStats;
        const bytes =
          ours.stored && other.stored
            ? div(ours.stored.bytes_per_checkpoint, other.stored.bytes_per_checkpoint)
            : null;
        out.push({
          operation,
          agentstate: ours.name,
          versus: other.name,
          ops_per_s: div(a.ops_per_s, b.ops_per_s),
          p99: div(a.p99_ms, b.p99_ms),
          bytes_per_checkpoint: bytes,
        });
      }
    }
  }
  return out;
}

const NAMES: Record<Operation, string> = { put: 'put', latest: 'latest get', history: 'history list' };

function fmt(n: number, digits = 3): string {
  return n >= 100 ? n.toFixed(0) : n.toPrecision(digits);
}

export function toMarkdown(report: BenchReport): string {
  const c = report.config;
  const lines = [
    `# Checkpoint benchmark (${report.size})`,
    '',
    `${report.started_at}, Node ${report.environment.node}, ${report.environment.cpus} x ${report.environment.cpu}, ` +
      `load average ${report.environment.load_average_1m.before} before, ${report.environment.load_average_1m.after} after.`,
    `${c.runs} runs x ${c.steps} checkpoints = ${c.puts} puts (after ${c.warmupRuns} warm-up run(s)), ` +
      `${c.gets} latest gets, ${c.lists} history lists of ${c.historyLimit}` +
      `${c.repeat > 1 ? `; each system ${c.repeat} times, interleaved, medians shown` : ''}. ` +
      `State: ${report.payload.initial_state_bytes} B at step 0, ${report.payload.final_state_bytes} B at the last step ` +
      `(mean ${report.payload.mean_state_bytes} B). SQLite: WAL, synchronous=${c.sqlite_synchronous} for every system.`,
    '',
    '| system | operation | ops/s | p50 ms | p99 ms |',
    '| --- | --- | ---: | ---: | ---: |',
  ];
  for (const s of report.systems) {
    if (s.ops === null) continue;
    for (const op of OPERATIONS) {
      const o = s.ops[op];
      lines.push(`| ${s.name} | ${NAMES[op]} | ${fmt(o.ops_per_s)} | ${fmt(o.p50_ms)} | ${fmt(o.p99_ms)} |`);
    }
  }
  lines.push(
    '',
    '| system | bytes per checkpoint | file growth per checkpoint | measured as |',
    '| --- | ---: | ---: | --- |',
  );
  for (const s of report.systems) {
    if (!s.stored) continue;
    const file = s.stored.file_bytes_per_checkpoint ?? '';
    lines.push(`| ${s.name} | ${s.stored.bytes_per_checkpoint} | ${file} | ${s.stored.method} |`);
  }
  lines.push(
    '',
    'Ratios: ops/s above 1 and p99 or bytes below 1 favour agentstate.',
    '',
    '| agentstate | versus | operation | ops/s ratio | p99 ratio | bytes ratio |',
    '| --- | --- | --- | ---: | ---: | ---: |',
  );
  for (const r of report.ratios) {
    const bytes =
      r.operation === 'put' && r.bytes_per_checkpoint !== null ? String(r.bytes_per_checkpoint) : '';
    lines.push(
      `| ${r.agentstate} | ${r.versus} | ${NAMES[r.operation]} | ${r.ops_per_s} | ${r.p99} | ${bytes} |`,
    );
  }
  const failed = report.systems.filter((s) => s.error !== null);
  if (failed.length > 0) {
    lines.push('', 'Not measured:', '');
    for (const s of failed) lines.push(`- ${s.name}: ${s.error}`);
  }
  return `${lines.join('\n')}\n`;
}
