/**
 * The two formats of `/metrics`: which one an `Accept` header gets (bad headers included), OpenMetrics with
 * the turn latency's exemplars, the Prometheus text unchanged by an OpenMetrics render, and exemplars kept
 * when the metrics of several threads are summed. Over real HTTP on loopback for the route.
 */
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { createServer } from '../../src/http/server.js';
import {
  type MetricJson,
  metricsFormatOf,
  renderRegistry,
  renderSummed,
} from '../../src/observability/exposition.js';
import { createMetrics } from '../../src/observability/metrics.js';
import { traceExemplar } from '../../src/observability/tracing.js';
import { createMemoryStore } from '../../src/store/memory/index.js';

const PROMETHEUS_ACCEPT =
  'application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1';
const labels = { agent: 'flight_booking', model: 'rules', outcome: 'ok' };
const TRACE = 'a'.repeat(32);
/** Exemplar labels as the server makes them (prom-client types them as the metric's own label names). */
const exemplar = (traceId: string): Record<string, string> => ({ trace_id: traceId });

describe('metrics formats', () => {
  it('answers OpenMetrics only to a scraper that asks for it', () => {
    expect(metricsFormatOf(PROMETHEUS_ACCEPT)).toBe('openmetrics');
    expect(metricsFormatOf('application/openmetrics-text')).toBe('openmetrics');
    expect(metricsFormatOf(['text/plain', 'application/openmetrics-text'])).toBe('openmetrics');
    for (const accept of [
      undefined,
      '',
      '*/*',
      'text/plain',
      'text/plain;q=0.9,application/openmetrics-text;q=0.1',
      'application/openmetrics-text;q=0',
      'application/openmetrics-text;q=nope',
      ';;,,;q=;',
      'application/json',
    ])
      expect(metricsFormatOf(accept), String(accept)).toBe('prometheus');
  });

  it('renders exemplars in OpenMetrics only, and leaves the Prometheus text as it was', async () => {
    const metrics = createMetrics({ processMetrics: false });
    metrics.turns.inc(labels);
    metrics.turnDuration.observe({ labels, value: 0.2, exemplarLabels: exemplar(TRACE) });
    metrics.turnDuration.observe({ labels, value: 3, exemplarLabels: {} });
    metrics.turnDuration.observe(labels, 4); // the usual form works too, without an exemplar
    const before = await renderRegistry(metrics.registry, 'prometheus');

    const open = await renderRegistry(metrics.registry, 'openmetrics');
    expect(open).toMatch(/^# TYPE agentstate_turns counter$/m);
    expect(open).toMatch(/^agentstate_turns_total\{agent="flight_booking",model="rules",outcome="ok"\} 1$/m);
    const bucket = `agentstate_turn_duration_seconds_bucket{le="0.25",agent="flight_booking",model="rules",outcome="ok"} 1`;
    expect(open).toContain(`${bucket} # {trace_id="${TRACE}"} 0.2 `);
    expect(open.match(/trace_id/g)).toHaveLength(1); // the observations without labels left none
    expect(open).toMatch(/^agentstate_turn_duration_seconds_count\{[^}]*\} 3$/m);
    expect(open.endsWith('# EOF\n')).toBe(true);

    expect(await renderRegistry(metrics.registry, 'prometheus')).toBe(before);
    expect(before).toMatch(/^# TYPE agentstate_turns_total counter$/m);
    expect(before).not.toContain('trace_id');
  });

  it('keeps the newest exemplar of each bucket when threads’ metrics are summed', async () => {
    const threads = [createMetrics({ processMetrics: false }), createMetrics({ processMetrics: false })];
    const older = 'b'.repeat(32);
    threads[0]?.turnDuration.observe({ labels, value: 0.2, exemplarLabels: exemplar(older) });
    await new Promise((resolve) => setTimeout(resolve, 5)); // a later timestamp
    threads[1]?.turnDuration.observe({ labels, value: 0.2, exemplarLabels: exemplar(TRACE) });
    threads[1]?.turnDuration.observe({ labels, value: 0.007, exemplarLabels: exemplar(older) });
    // As they cross a thread or IPC: plain JSON.
    const sources = await Promise.all(
      threads.map(
        async (m) => JSON.parse(JSON.stringify(await m.registry.getMetricsAsJSON())) as MetricJson[],
      ),
    );
    const open = await renderSummed(sources, 'openmetrics');
    expect(open).toMatch(new RegExp(`le="0.25",[^}]*\\} 3 # \\{trace_id="${TRACE}"\\} 0.2 `));
    expect(open).toMatch(new RegExp(`le="0.01",[^}]*\\} 1 # \\{trace_id="${older}"\\} 0.007 `));
    expect(open).toMatch(/^agentstate_turn_duration_seconds_count\{[^}]*\} 3$/m);
    const plain = await renderSummed(sources, 'prometheus');
    expect(plain).toMatch(/^agentstate_turn_duration_seconds_count\{[^}]*\} 3$/m);
    expect(plain).not.toContain('trace_id');
  });

  it('has no exemplar to give without a tracer provider', () => {
    expect(traceExemplar()).toEqual({});
  });

  it('GET /metrics answers the format the Accept header asks for', async () => {
    const metrics = createMetrics({ processMetrics: false });
    const store = createMemoryStore();
    const app = await createServer({ store, metrics, logger: false, inspector: false });
    try {
      await app.listen({ host: '127.0.0.1', port: 0 });
      const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/metrics`;
      const open = await fetch(url, { headers: { accept: PROMETHEUS_ACCEPT } });
      expect(open.headers.get('content-type')).toBe(
        'application/openmetrics-text; version=1.0.0; charset=utf-8',
      );
      expect((await open.text()).endsWith('# EOF\n')).toBe(true);
      for (const accept of [undefined, 'text/plain', 'garbage;q=;;']) {
        const plain = await fetch(url, accept === undefined ? {} : { headers: { accept } });
        expect(plain.status).toBe(200);
        expect(plain.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
        expect(await plain.text()).toMatch(/^# TYPE agentstate_http_requests_total counter$/m);
      }
    } finally {
      await app.close();
      await store.close();
    }
  });
});
