/**
 * The two text formats `GET /metrics` answers in: the Prometheus text format (0.0.4), what a scraper gets
 * unless it asks otherwise, and OpenMetrics (1.0.0), chosen by `Accept: application/openmetrics-text`, the
 * only one that carries exemplars (the trace id of a turn, see http/turn-metrics.ts).
 *
 * OpenMetrics is rendered by prom-client from a registry of that type filled with copies of the metrics'
 * values, never with the metrics themselves: prom-client renames the counters it renders as OpenMetrics
 * (`x_total` becomes `x`) in place, which would break every later Prometheus scrape.
 */
import {
  AggregatorRegistry,
  type MetricObjectWithValues,
  type MetricValue,
  type OpenMetricsContentType,
  Registry,
} from 'prom-client';

export type MetricsFormat = 'prometheus' | 'openmetrics';

/** One exemplar, as prom-client keeps it on a histogram bucket (a plain object once it crossed a thread). */
export interface ExemplarJson {
  readonly labelSet: Readonly<Record<string, string | number>>;
  readonly value: number;
  readonly timestamp?: number;
}

/** One sample of `Registry.getMetricsAsJSON()`, with the exemplar a histogram bucket may carry. */
export type SampleJson = MetricValue<string> & {
  readonly metricName?: string;
  readonly exemplar?: ExemplarJson | null;
};

/** One metric of `Registry.getMetricsAsJSON()`. */
export type MetricJson = MetricObjectWithValues<SampleJson>;

const CONTENT_TYPES: Readonly<Record<MetricsFormat, string>> = {
  prometheus: Registry.PROMETHEUS_CONTENT_TYPE,
  openmetrics: Registry.OPENMETRICS_CONTENT_TYPE,
};

export function contentTypeOf(format: MetricsFormat): string {
  return CONTENT_TYPES[format];
}

/** The weight (`q`) an Accept header gives `mediaType`: 0 when it names it not at all or badly. */
function weightOf(accept: string, mediaType: string): number {
  let best = 0;
  for (const range of accept.split(',')) {
    const [type, ...parameters] = range.split(';').map((part) => part.trim().toLowerCase());
    if (type !== mediaType) continue;
    const q = parameters.find((parameter) => parameter.startsWith('q='));
    const weight = q === undefined ? 1 : Number(q.slice(2));
    if (Number.isFinite(weight) && weight > best) best = Math.min(weight, 1);
  }
  return best;
}

/**
 * OpenMetrics when the scraper asks for it at least as much as for the Prometheus text (Prometheus itself
 * sends `application/openmetrics-text;version=1.0.0,...,text/plain;version=0.0.4;q=0.5,...`); the
 * Prometheus text otherwise, also for a missing or malformed header.
 */
export function metricsFormatOf(accept: string | readonly string[] | undefined): MetricsFormat {
  const header = typeof accept === 'string' ? accept : (accept ?? []).join(',');
  const open = weightOf(header, 'application/openmetrics-text');
  return open > 0 && open >= weightOf(header, 'text/plain') ? 'openmetrics' : 'prometheus';
}

/** The metric's type as prom-client sets it at run time (`counter`, `histogram`...; typed as an enum). */
const typeOf = (metric: MetricJson): string => String(metric.type);

const labelsKey = (labels: Readonly<Record<string, unknown>>): string =>
  JSON.stringify(
    Object.keys(labels)
      .sort()
      .map((name) => [name, String(labels[name])]),
  );
const sampleKey = (metric: string, sample: SampleJson): string =>
  `${metric}\n${sample.metricName ?? ''}\n${labelsKey(sample.labels)}`;

/**
 * The metrics of several registries summed, as AggregatorRegistry.aggregate does, with each histogram
 * bucket keeping the newest exemplar any of them had (aggregate drops them).
 */
async function summed(sources: readonly (readonly MetricJson[])[]): Promise<MetricJson[]> {
  const input = sources as Parameters<typeof AggregatorRegistry.aggregate>[0];
  const total = (await AggregatorRegistry.aggregate(input).getMetricsAsJSON()) as MetricJson[];
  const newest = new Map<string, ExemplarJson>();
  for (const metric of sources.flat()) {
    if (typeOf(metric) !== 'histogram') continue;
    for (const sample of metric.values) {
      const exemplar = sample.exemplar;
      if (exemplar === null || exemplar === undefined) continue;
      const key = sampleKey(metric.name, sample);
      const known = newest.get(key);
      if (known === undefined || (exemplar.timestamp ?? 0) > (known.timestamp ?? 0))
        newest.set(key, exemplar);
    }
  }
  if (newest.size === 0) return total;
  return total.map((metric) =>
    typeOf(metric) !== 'histogram'
      ? metric
      : {
          ...metric,
          values: metric.values.map((sample) => {
            const exemplar = newest.get(sampleKey(metric.name, sample));
            return exemplar === undefined ? sample : { ...sample, exemplar };
          }),
        },
  );
}

/** Renders metrics as OpenMetrics, exemplars included. */
function openMetricsOf(metrics: readonly MetricJson[]): Promise<string> {
  const registry = new Registry<OpenMetricsContentType>();
  registry.setContentType(Registry.OPENMETRICS_CONTENT_TYPE);
  for (const metric of metrics) {
    // OpenMetrics names a counter's family without `_total` and adds it to the sample.
    const name = typeOf(metric) === 'counter' ? metric.name.replace(/_total$/, '') : metric.name;
    const copy = { ...metric, name };
    registry.registerMetric({ ...copy, get: async () => copy } as unknown as Parameters<
      Registry<OpenMetricsContentType>['registerMetric']
    >[0]);
  }
  return registry.metrics();
}

/** The metrics of one registry in `format`; the Prometheus text is the registry's own, as before. */
export async function renderRegistry(registry: Registry, format: MetricsFormat): Promise<string> {
  if (format === 'prometheus') return registry.metrics();
  return openMetricsOf((await registry.getMetricsAsJSON()) as MetricJson[]);
}

/** The metrics of several registries (threads, cluster workers, as JSON), summed and rendered in `format`. */
export async function renderSummed(
  sources: readonly (readonly MetricJson[])[],
  format: MetricsFormat,
): Promise<string> {
  if (format === 'prometheus')
    return AggregatorRegistry.aggregate(
      sources as Parameters<typeof AggregatorRegistry.aggregate>[0],
    ).metrics();
  return openMetricsOf(sources.length === 1 ? (sources[0] ?? []) : await summed(sources));
}
