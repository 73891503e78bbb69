import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createMetrics } from '../../src/observability/metrics.js';

interface Panel {
  title: string;
  targets: { expr: string }[];
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
});
