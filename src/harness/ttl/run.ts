/**
 * The expiry harness (SPEC 7, the seed's test three): create sessions with messages, leave them idle, run
 * the sweeper in-process on its interval as a server would, and after the wait count what remains in the
 * store itself (its own driver, not the StateStore API) and how much storage it uses, against a baseline.
 */
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { startSweeper } from '../../lifecycle/sweeper.js';
import { makeFolder } from '../../process/folders.js';
import { openStore } from '../../store/open.js';
import { openProbe } from './probe.js';
import { type TtlReport, type TtlSample, ttlMarkdown } from './report.js';

export interface TtlProgress {
  readonly phase: 'create' | 'idle' | 'done';
  /** Sessions created so far (create), or seconds idle so far (idle). */
  readonly done: number;
  readonly total: number;
  /** Sessions of the run still stored (idle). */
  readonly stored?: number;
}

export interface TtlTestOptions {
  readonly storeUrl: string;
  /** Default 1000. */
  readonly sessions?: number;
  /** Default 60. */
  readonly ttlSeconds?: number;
  /** Seconds idle before counting. Default 120. */
  readonly waitSeconds?: number;
  /** Default 4. */
  readonly messagesPerSession?: number;
  /** Where the JSON report goes; the Markdown summary goes beside it (.md). None by default. */
  readonly reportPath?: string;
  readonly onProgress?: (progress: TtlProgress) => void;
  /** The sweeper's interval. Default 30 000 (the server's default). */
  readonly sweepIntervalMs?: number;
  /** Sessions created at once. Default 16. */
  readonly concurrency?: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function runTtlTest(options: TtlTestOptions): Promise<TtlReport> {
  const sessions = options.sessions ?? 1000;
  const ttl = options.ttlSeconds ?? 60;
  const wait = options.waitSeconds ?? 120;
  const perSession = options.messagesPerSession ?? 4;
  const intervalMs = options.sweepIntervalMs ?? 30_000;
  const concurrency = options.concurrency ?? 16;
  const progress = options.onProgress ?? (() => undefined);
  const tenant = `ttl_${randomUUID().replaceAll('-', '')}`;
  // A report path that cannot be written fails now, not after the whole run.
  if (options.reportPath !== undefined) makeFolder(dirname(options.reportPath), 'for the report');

  const store = await openStore(options.storeUrl);
  const probe = openProbe(options.storeUrl, store);
  try {
    const extra_before = await probe.extra();
    const baseline = await probe.bytes();
    const started = Date.now();
    let created = 0;
    const worker = async () => {
      while (created < sessions) {
        const n = created++;
        const scope = { tenant_id: tenant, user_id: `u${n % 10}` };
        const session = await store.createSession(scope, { ttl_seconds: ttl, context: { lang: 'en', n } });
        const messages = Array.from({ length: perSession }, (_, i) => ({
          role: i % 2 === 0 ? ('user' as const) : ('assistant' as const),
          content: `message ${i} of session ${n}: ${'lorem ipsum dolor sit amet '.repeat(6)}`,
        }));
        if (messages.length > 0) await store.appendMessages(scope, session.id, messages);
        if (n % 50 === 0) progress({ phase: 'create', done: n, total: sessions });
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
    const create_ms = Date.now() - started;
    const peak = await probe.bytes();

    let sweeps = 0;
    let swept = 0;
    const sweeper = startSweeper({
      store,
      intervalMs,
      retention: false,
      onSweep: (report) => {
        sweeps++;
        swept += report.sessions;
      },
    });
    const idleStart = Date.now();
    const samples: TtlSample[] = [];
    let allGone: number | null = null;
    const sampleEvery = Math.max(1000, Math.min(5000, (wait * 1000) / 40));
    try {
      for (;;) {
        const idle = (Date.now() - idleStart) / 1000;
        const { sessions: stored } = await probe.count(tenant);
        samples.push({ t_s: Math.round(idle), stored });
        if (stored === 0 && allGone === null) allGone = Math.round(idle);
        progress({ phase: 'idle', done: Math.min(wait, Math.round(idle)), total: wait, stored });
        if (idle >= wait) break;
        await sleep(Math.min(sampleEvery, wait * 1000 - (Date.now() - idleStart)));
      }
    } finally {
      await sweeper.stop();
    }
    const residue = await probe.count(tenant);
    const after = await probe.bytes();
    const extra_after = await probe.extra();
    const residual_pct = (residue.sessions / sessions) * 100;
    const added = peak - baseline;
    const report: TtlReport = {
      store: redact(options.storeUrl),
      adapter: store.adapter,
      sessions,
      messages_per_session: perSession,
      ttl_s: ttl,
      wait_s: wait,
      sweep_interval_ms: intervalMs,
      residual: residue.sessions,
      residual_pct,
      residual_messages: residue.messages,
      all_gone_at_s: allGone,
      baseline_bytes: baseline,
      peak_bytes: peak,
      after_bytes: after,
      after_vs_baseline_pct: baseline === 0 ? 0 : ((after - baseline) / baseline) * 100,
      reclaimed_pct: added <= 0 ? 100 : ((peak - after) / added) * 100,
      create_ms,
      sweeps,
      swept,
      goal_residual_met: residual_pct <= 2,
      // within 10 % of the baseline; on an empty store (baseline near 0), 10 % of what the run added
      goal_storage_met: after - baseline <= 0.1 * Math.max(baseline, added),
      extra_before,
      extra_after,
      samples,
      measured: new Date().toISOString(),
    };
    progress({ phase: 'done', done: wait, total: wait, stored: residue.sessions });
    if (options.reportPath !== undefined) writeReports(options.reportPath, report);
    return report;
  } finally {
    await probe.close();
    await store.close();
  }
}

function redact(url: string): string {
  return url.replace(/\/\/([^:@/]+):([^@/]+)@/g, '//$1:***@');
}

export function writeReports(path: string, report: TtlReport): void {
  makeFolder(dirname(path), 'for the report');
  writeFileSync(path, `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(path.replace(/\.json$/, '').concat('.md'), ttlMarkdown(report));
}
