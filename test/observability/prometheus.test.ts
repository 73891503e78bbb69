/**
 * A real Prometheus (Debian's `prometheus` package) scrapes a real agentstate HTTP server and answers
 * `agentstate_sessions_active` through its own query API. Prometheus runs on a free port with a temporary
 * storage directory and is killed afterwards. Install it with `apt-get install -y prometheus`; without the
 * binary the test is skipped (and says why).
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createNetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createServer } from '../../src/http/server.js';
import { refreshSessionGauge } from '../../src/lifecycle/gauge.js';
import { instrumentStore } from '../../src/observability/instrumented-store.js';
import { createMetrics } from '../../src/observability/metrics.js';
import { createMemoryStore } from '../../src/store/memory/index.js';

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

    const port = await freePort();
    const config = join(dir, 'prometheus.yml');
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
        `--storage.tsdb.path=${join(dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
        '--log.level=warn',
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
    expect(values, stderr).toMatchObject({ active: 3, waiting_for_user: 1, paused: 0, ended: 0 });
    const up = (await (
      await fetch(`http://127.0.0.1:${port}/api/v1/query?query=${encodeURIComponent('up{job="agentstate"}')}`)
    ).json()) as QueryAnswer;
    expect(up.data.result[0]?.value[1]).toBe('1');
  }, 60_000);
});
