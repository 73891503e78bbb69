/**
 * `GET /metrics` and the HTTP request counters, when the server is given metrics. `/metrics` answers the
 * Prometheus text, or OpenMetrics (with the turn latency's exemplars) to a scraper whose `Accept` asks for
 * `application/openmetrics-text` (observability/exposition.ts).
 * The route label is the route's pattern (`/v1/sessions/:id`), never the raw URL, so ids do not explode
 * the label set.
 */
import type { FastifyInstance } from 'fastify';
import {
  contentTypeOf,
  type MetricsFormat,
  metricsFormatOf,
  renderRegistry,
} from '../observability/exposition.js';
import type { AgentStateMetrics } from '../observability/metrics.js';

/**
 * `collect` answers the metrics in the format asked; default: this process's registry (a worker of a cluster
 * passes one that asks the primary for every worker's, see observability/cluster-metrics.ts).
 */
export function registerMetrics(
  app: FastifyInstance,
  metrics: AgentStateMetrics,
  collect: (format: MetricsFormat) => Promise<string> = (format) => renderRegistry(metrics.registry, format),
): void {
  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? 'unmatched';
    if (route === '/metrics') return;
    metrics.httpRequests.inc({ route, method: request.method, status: String(reply.statusCode) });
    metrics.httpDuration.observe({ route, method: request.method }, reply.elapsedTime / 1000);
  });

  app.get('/metrics', { schema: { hide: true } }, async (request, reply) => {
    const format = metricsFormatOf(request.headers.accept);
    const text = await collect(format);
    return reply.header('content-type', contentTypeOf(format)).send(text);
  });
}
