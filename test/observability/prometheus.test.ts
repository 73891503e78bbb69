/**
 * A real Prometheus (Debian's `prometheus` package) scrapes a real agentstate HTTP server and answers
 * `agentstate_sessions_active` through its own query API; with `--enable-feature=exemplar-storage`, it scrapes
 * OpenMetrics from `agentstate serve` traced to a local OTLP receiver and keeps the turn latency's exemplar,
 * whose trace id is the turn's. Prometheus runs on a free port with a temporary storage directory and is
 * killed afterwards. Install it with `apt-get install -y prometheus`; without the
 * binary the test is skipped (and says why).
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createNetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createServer } from '../../src/http/server.js';
import { refreshSessionGauge } from '../../src/lifecycle/gauge.js';
import { instrumentStore } from '../../src/observability/instrumented-store.js';
import { createMetrics } from '../../src/observability/metrics.js';
import { createMemoryStore } from '../../src/store/memory/index.js';
import { call, listening, loadHook, serve, startReceiver, until } from './tracing-otlp.js';

function which(binary: string): string | null {
  try {
    return execFileSync('which', [binary], { encoding: 'utf8' }).trim() || null;
  } catch {
    return null;
  }
}

const PROMETHEUS = which('prometheus');
if (PROMETHEUS === null)
  console.warn('prometheus is not installed (apt-get install -y prometheus): test skipped');

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createNetServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

const dir = mkdtempSync(join(tmpdir(), 'agentstate-prometheus-'));
const cleanups: (() => Promise<void> | void)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  rmSync(dir, { recursive: true, force: true });
});

/**
 * Starts Prometheus (with `features`) scraping `target` every second: the port of its API and what it logged.
 * Killed after the tests.
 */
async function startPrometheus(
  name: string,
  target: string,
  features: readonly string[],
): Promise<{ port: number; log: () => string }> {
  const port = await freePort();
  const config = join(dir, `${name}.yml`);
  writeFileSync(
    config,
    [
      'global:',
      '  scrape_interval: 1s',
      'scrape_configs:',
      '  - job_name: agentstate',
      '    metrics_path: /metrics',
      '    static_configs:',
      `      - targets: ['${target}']`,
      '',
    ].join('\n'),
  );
  const child: ChildProcess = spawn(
    PROMETHEUS as string,
    [
      `--config.file=${config}`,
      `--storage.tsdb.path=${join(dir, `${name}-data`)}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
      ...features.map((feature) => `--enable-feature=${feature}`),
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  cleanups.push(async () => {
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  });
  return { port, log: () => stderr };
}

/** The queries of the dashboard's turn latency panel that show exemplars. */
function turnLatencyQueries(): string[] {
  const dashboard = JSON.parse(readFileSync('deploy/grafana/agentstate.json', 'utf8')) as {
    panels: { title: string; targets: { expr: string; exemplar?: boolean }[] }[];
  };
  const panel = dashboard.panels.find((p) => p.title.toLowerCase().includes('turn latency'));
  return (panel?.targets ?? []).filter((t) => t.exemplar === true).map((t) => t.expr);
}

interface ExemplarsAnswer {
  status: string;
  data?: { seriesLabels: Record<string, string>; exemplars: { labels: Record<string, string> }[] }[];
}

interface QueryAnswer {
  status: string;
  data: { result: { metric: Record<string, string>; value: [number, string] }[] };
}

describe.skipIf(PROMETHEUS === null)('Prometheus scrapes the server', () => {
  it('reads agentstate_sessions_active back through /api/v1/query', async () => {
    const metrics = createMetrics({ processMetrics: false });
    const store = instrumentStore(createMemoryStore(), metrics);
    const scope = { tenant_id: 't_prom', user_id: 'u_prom' };
    for (let i = 0; i < 3; i++) await store.createSession(scope, {});
    await store.createSession(scope, { status: 'waiting_for_user' });
    await refreshSessionGauge(store, metrics);
    const app = await createServer({ store, metrics, logger: false });
    cleanups.push(async () => {
      await app.close();
      await store.close();
    });
    const appAddress = await app.listen({ host: '127.0.0.1', port: 0 });
    const target = new URL(appAddress).host;

    const { port, log } = await startPrometheus('plain', target, []);

    const query = `http://127.0.0.1:${port}/api/v1/query?query=${encodeURIComponent('agentstate_sessions_active')}`;
    const deadline = Date.now() + 30_000;
    let values: Record<string, number> = {};
    while (Date.now() < deadline) {
      try {
        const answer = (await (await fetch(query)).json()) as QueryAnswer;
        values = Object.fromEntries(
          answer.data.result.map((r) => [r.metric.status ?? '', Number(r.value[1])]),
        );
        if (values.active === 3 && values.waiting_for_user === 1) break;
      } catch {
        // not listening yet
      }
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    expect(values, log()).toMatchObject({ active: 3, waiting_for_user: 1, paused: 0, ended: 0 });
    const up = (await (
      await fetch(`http://127.0.0.1:${port}/api/v1/query?query=${encodeURIComponent('up{job="agentstate"}')}`)
    ).json()) as QueryAnswer;
    expect(up.data.result[0]?.value[1]).toBe('1');
  }, 60_000);

  it('stores the exemplar of a traced turn: /api/v1/query_exemplars names the turn’s trace', async () => {
    const receiver = await startReceiver();
    cleanups.push(() => receiver.close());
    const env = {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_TRACES_SAMPLER: 'always_on',
      OTEL_BSP_SCHEDULE_DELAY: '50',
    };
    const args = ['--host', '127.0.0.1', '--port', '0', '--store', `sqlite:${join(dir, 'traced.db')}`];
    args.push('--data-dir', join(dir, 'traced-data'));
    const hook = loadHook(mkdtempSync(join(dir, 'hook-')), join(dir, 'traced.loaded'));
    const served = serve(args, dir, env, hook);
    cleanups.push(async () => {
      served.child.kill('SIGTERM');
      await served.exited;
    });
    await listening(served);
    const { port, log } = await startPrometheus('exemplars', new URL(served.url).host, ['exemplar-storage']);

    const made = await call<{ id: string }>(served.url, 'POST', '/v1/sessions', {
      user_id: 'u_exemplar',
      agent: 'flight_booking',
    });
    const traceId = randomBytes(16).toString('hex');
    const traceparent = `00-${traceId}-${randomBytes(8).toString('hex')}-01`;
    const input = { input: 'I need a flight from Beijing to Shanghai' };
    const turn = await call(served.url, 'POST', `/v1/sessions/${made.body.id}/turns`, input, { traceparent });
    expect(turn.status).toBe(200);

    // Asked as Grafana's turn latency panel asks for its exemplars: with each of the panel's queries.
    const now = Date.now() / 1000;
    const exemplarsOf = async (expr: string) => {
      const query = new URLSearchParams({ query: expr, start: String(now - 600), end: String(now + 600) });
      const answer = (await (
        await fetch(`http://127.0.0.1:${port}/api/v1/query_exemplars?${query}`)
      ).json()) as ExemplarsAnswer;
      return (answer.data ?? []).flatMap((series) => series.exemplars.map((e) => e.labels.trace_id ?? ''));
    };
    const exprs = turnLatencyQueries();
    expect(exprs.length).toBeGreaterThan(0);
    let traceIds: string[] = [];
    for (const deadline = Date.now() + 30_000; !traceIds.includes(traceId) && Date.now() < deadline; ) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      traceIds = await exemplarsOf(exprs[0] as string);
    }
    expect(traceIds, log()).toContain(traceId);
    for (const expr of exprs) expect(await exemplarsOf(expr), expr).toContain(traceId);
    // The trace is the turn's, as the OTLP receiver got it.
    await until('the turn span', () =>
      receiver.spans.some((s) => s.traceId === traceId && s.name === 'agentstate.turn'),
    );
  }, 90_000);
});
