import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createServer } from '../../src/http/server.js';
import { refreshSessionGauge } from '../../src/lifecycle/gauge.js';
import { instrumentStore } from '../../src/observability/instrumented-store.js';
import { createMetrics } from '../../src/observability/metrics.js';
import { createMemoryStore } from '../../src/store/memory/index.js';

interface Panel {
  title: string;
  targets: { expr: string; exemplar?: boolean }[];
}

const dashboard = JSON.parse(readFileSync('deploy/grafana/agentstate.json', 'utf8')) as { panels: Panel[] };

function queriedMetrics(): Set<string> {
  const names = new Set<string>();
  for (const panel of dashboard.panels) {
    for (const target of panel.targets) {
      for (const match of target.expr.matchAll(/agentstate_[a-z_]+/g)) {
        names.add(match[0].replace(/_(bucket|sum|count)$/, ''));
      }
    }
  }
  return names;
}

describe('Grafana dashboard', () => {
  it('queries only metrics the server exports', async () => {
    const exported = new Set(
      (await createMetrics().registry.getMetricsAsJSON()).map((metric) => metric.name),
    );
    const queried = queriedMetrics();
    expect(queried.size).toBeGreaterThan(8);
    for (const name of queried) expect(exported, `dashboard queries ${name}`).toContain(name);
  });

  it("the server's real /metrics output holds every metric the dashboard queries", async () => {
    const metrics = createMetrics();
    const store = instrumentStore(createMemoryStore(), metrics);
    const app = await createServer({ store, metrics, logger: false });
    try {
      await store.createSession({ tenant_id: 't_dash', user_id: 'u_dash' }, {});
      await refreshSessionGauge(store, metrics);
      const response = await app.inject({ method: 'GET', url: '/metrics' });
      expect(response.statusCode).toBe(200);
      expect(response.headers['content-type']).toContain('text/plain');
      const declared = new Set(
        [...response.body.matchAll(/^# TYPE (\S+) /gm)].map((match) => match[1] as string),
      );
      const queried = queriedMetrics();
      expect(queried.size).toBeGreaterThan(8);
      for (const name of queried) expect(declared, `dashboard queries ${name}`).toContain(name);
      expect(response.body).toMatch(/^agentstate_sessions_active\{status="active"\} 1$/m);
    } finally {
      await app.close();
      await store.close();
    }
  });

  it('has the panels an operator needs', () => {
    const titles = dashboard.panels.map((panel) => panel.title.toLowerCase()).join('\n');
    for (const needed of [
      'active sessions',
      'turn latency',
      'conflicts',
      'unknown actions',
      'sweeps',
      'errors',
    ]) {
      expect(titles).toContain(needed);
    }
  });

  it('shows the turn latency exemplars and links them to their traces in Tempo', () => {
    const panel = dashboard.panels.find((p) => p.title.toLowerCase().includes('turn latency')) as Panel;
    expect(panel.targets.length).toBeGreaterThan(0);
    for (const target of panel.targets) {
      expect(target.exemplar, target.expr).toBe(true);
      expect(target.expr).toContain('agentstate_turn_duration_seconds_bucket');
    }
    // The example provisioning: Prometheus links the exemplar label the server writes to the Tempo data source.
    const provisioning = readFileSync('deploy/grafana/provisioning/datasources/agentstate.yml', 'utf8');
    const link =
      /exemplarTraceIdDestinations:\n(?:\s*#.*\n)*\s*- name: (\S+)\n\s*datasourceUid: (\S+)\n/.exec(
        provisioning,
      );
    // The label of the exemplars `/metrics` answers (test/observability/exemplars.test.ts).
    expect(link?.[1]).toBe('trace_id');
    const tempo = new RegExp(`- name: \\S+\\n\\s*type: tempo\\n\\s*uid: ${link?.[2]}\\n`);
    expect(provisioning).toMatch(tempo);
    expect(provisioning).toMatch(/^apiVersion: 1$/m);
  });
});
