/**
 * `GET /metrics` (Prometheus text) and the HTTP request counters, when the server is given metrics.
 * The route label is the route's pattern (`/v1/sessions/:id`), never the raw URL, so ids do not explode
 * the label set.
 */
import type { FastifyInstance } from 'fastify';
import type { AgentStateMetrics } from '../observability/metrics.js';

/**
 * `collect` answers the Prometheus text; default: this process's registry (a worker of a cluster passes one
 * that asks the primary for every worker's, see observability/cluster-metrics.ts).
 */
export function registerMetrics(
  app: FastifyInstance,
  metrics: AgentStateMetrics,
  collect: () => Promise<string> = () => metrics.registry.metrics(),
): void {
  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? 'unmatched';
    if (route === '/metrics') return;
    metrics.httpRequests.inc({ route, method: request.method, status: String(reply.statusCode) });
    metrics.httpDuration.observe({ route, method: request.method }, reply.elapsedTime / 1000);
  });

  app.get('/metrics', { schema: { hide: true } }, async (_request, reply) => {
    const text = await collect();
    return reply.header('content-type', metrics.registry.contentType).send(text);
  });
}
