/**
 * The OpenTelemetry SDK of `agentstate serve` (and of its turn threads): set up from the standard `OTEL_*`
 * variables, and only when one of them asks for traces. Without any, nothing is loaded: the SDK packages are
 * imported here on demand, never by the library.
 *
 * Read by the SDK itself: `OTEL_EXPORTER_OTLP_ENDPOINT` / `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`,
 * `OTEL_EXPORTER_OTLP_PROTOCOL` (`http/protobuf`, the default, `http/json` or `grpc`), `OTEL_SERVICE_NAME`
 * (default here `agentstate`), `OTEL_TRACES_SAMPLER` and `OTEL_TRACES_SAMPLER_ARG`, `OTEL_BSP_*`,
 * `OTEL_RESOURCE_ATTRIBUTES`. `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none` turn it all off.
 */

/** The variables whose presence turns tracing on. */
export const TRACING_VARIABLES = [
  'OTEL_EXPORTER_OTLP_ENDPOINT',
  'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
  'OTEL_EXPORTER_OTLP_PROTOCOL',
  'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL',
  'OTEL_TRACES_EXPORTER',
  'OTEL_SERVICE_NAME',
  'OTEL_TRACES_SAMPLER',
] as const;

const PROTOCOLS = ['http/protobuf', 'http/json', 'grpc'];
const SAMPLERS = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
];
const EXPORTERS = ['otlp', 'console', 'none'];

/** Routes whose requests get no span: Prometheus scrapes and health probes. */
const UNTRACED_PATHS = new Set(['/metrics', '/healthz', '/readyz']);

type Env = Readonly<Record<string, string | undefined>>;

const set = (env: Env, name: string): string | null => {
  const value = env[name]?.trim();
  return value === undefined || value === '' ? null : value;
};

/** True when the variables ask for traces (and do not turn the SDK off). */
export function tracingRequested(env: Env): boolean {
  if (set(env, 'OTEL_SDK_DISABLED')?.toLowerCase() === 'true') return false;
  if (set(env, 'OTEL_TRACES_EXPORTER') === 'none') return false;
  return TRACING_VARIABLES.some((name) => set(env, name) !== null);
}

/** Checks the variables agentstate relies on, with an error that names the variable and what it accepts. */
export function checkTracingEnv(env: Env): void {
  const oneOf = (name: string, allowed: readonly string[]) => {
    const value = set(env, name);
    if (value !== null && !allowed.includes(value.toLowerCase()))
      throw new Error(`${name}=${JSON.stringify(value)}: must be one of ${allowed.join(', ')}`);
  };
  oneOf('OTEL_EXPORTER_OTLP_PROTOCOL', PROTOCOLS);
  oneOf('OTEL_EXPORTER_OTLP_TRACES_PROTOCOL', PROTOCOLS);
  oneOf('OTEL_TRACES_SAMPLER', SAMPLERS);
  for (const exporter of set(env, 'OTEL_TRACES_EXPORTER')?.split(',') ?? [])
    if (!EXPORTERS.includes(exporter.trim()))
      throw new Error(
        `OTEL_TRACES_EXPORTER=${JSON.stringify(exporter)}: must be one of ${EXPORTERS.join(', ')}`,
      );
  for (const name of ['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT']) {
    const value = set(env, name);
    const protocol = value === null || !URL.canParse(value) ? null : new URL(value).protocol;
    if (value !== null && protocol !== 'http:' && protocol !== 'https:')
      throw new Error(`${name}=${JSON.stringify(value)}: not an http:// or https:// URL`);
  }
  const ratio = set(env, 'OTEL_TRACES_SAMPLER_ARG');
  if (ratio !== null && (env.OTEL_TRACES_SAMPLER ?? '').includes('traceidratio')) {
    const value = Number(ratio);
    if (!Number.isFinite(value) || value < 0 || value > 1)
      throw new Error(`OTEL_TRACES_SAMPLER_ARG=${JSON.stringify(ratio)}: must be a number from 0 to 1`);
  }
}

export interface Tracing {
  /** Sends the spans still buffered and stops the SDK. */
  shutdown(): Promise<void>;
}

/**
 * Starts the SDK when the variables ask for traces (else null, nothing loaded). `http`: the HTTP server's
 * process, which also instruments Fastify (`@fastify/otel`: a span per request, `traceparent` taken in).
 */
export async function startTracing(env: Env, options: { readonly http: boolean }): Promise<Tracing | null> {
  if (!tracingRequested(env)) return null;
  checkTracingEnv(env);
  const { NodeSDK } = await import('@opentelemetry/sdk-node');
  const instrumentations = [];
  if (options.http) {
    const { FastifyOtelInstrumentation } = await import('@fastify/otel');
    // Scrapes and probes make no traces.
    const ignorePaths = ({ url }: { url: string }) => UNTRACED_PATHS.has(url);
    instrumentations.push(new FastifyOtelInstrumentation({ registerOnInitialization: true, ignorePaths }));
  }
  const sdk = new NodeSDK({
    ...(set(env, 'OTEL_SERVICE_NAME') === null ? { serviceName: 'agentstate' } : {}),
    instrumentations,
    // Traces only: metrics stay Prometheus's (/metrics), logs stay JSON lines on stdout.
    metricReaders: [],
    logRecordProcessors: [],
  });
  sdk.start();
  return { shutdown: () => sdk.shutdown() };
}
