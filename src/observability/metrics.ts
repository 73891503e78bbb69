/**
 * The Prometheus metrics of SPEC 8, on a registry of their own (never the global one, so several servers in
 * one process, as in tests, do not collide). Names are what deploy/grafana/agentstate.json queries.
 */
import {
  Counter,
  collectDefaultMetrics,
  Gauge,
  Histogram,
  type LabelValues,
  type ObserveDataWithExemplar,
  Registry,
} from 'prom-client';
import { statementsSent } from '../store/sql/executor.js';

export interface AgentStateMetrics {
  readonly registry: Registry;
  readonly sessionsActive: Gauge<'status'>;
  readonly sessionsCreated: Counter<'agent'>;
  readonly sessionsExpired: Counter;
  readonly turns: Counter<'agent' | 'model' | 'outcome'>;
  /** Also takes `observe({ labels, value, exemplarLabels })`: exemplars carry the turn's `trace_id`. */
  readonly turnDuration: Histogram<'agent' | 'model' | 'outcome'>;
  readonly modelCallDuration: Histogram<'model' | 'call' | 'outcome'>;
  readonly checkpointWriteDuration: Histogram<'adapter'>;
  readonly versionConflicts: Counter<'kind'>;
  readonly actions: Counter<'status'>;
  readonly actionsUnknown: Gauge;
  readonly recoveredRuns: Counter<'outcome'>;
  readonly sweeperRuns: Counter<'outcome'>;
  readonly sweeperDeleted: Counter;
  readonly storeErrors: Counter<'adapter' | 'code'>;
  /**
   * Statements the thread's SQL stores sent (store/sql/executor.ts `statementsSent`): round trips on
   * PostgreSQL. Read from the count when scraped; a thread's registry reports its own thread's.
   */
  readonly storeRoundTrips: Counter<'adapter'>;
  readonly httpRequests: Counter<'route' | 'method' | 'status'>;
  readonly httpDuration: Histogram<'route' | 'method'>;
}

export interface MetricsOptions {
  /** Also export Node.js process metrics (CPU, memory, event loop). Default true. */
  readonly processMetrics?: boolean;
}

/**
 * How often the event loop's delay is sampled (prom-client's `eventLoopMonitoringPrecision`, default 10 ms):
 * each sample wakes the loop, and at 100 a second an idle server spent about 9 ms of CPU a second on them.
 * Ten a second still see every delay of 100 ms or more, and shorter ones in proportion to their length.
 */
const EVENT_LOOP_SAMPLE_MS = 100;

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/**
 * Registers a histogram made with `enableExemplars` on the Prometheus-format registry (prom-client refuses
 * that at construction only). The Prometheus text leaves the exemplars out; the OpenMetrics answer of
 * `/metrics` (observability/exposition.ts) carries them. Its `observe` also takes the usual `(labels, value)`
 * and `(value)` forms (prom-client's exemplar `observe` takes only `{ labels, value, exemplarLabels }`).
 */
function withExemplars<L extends string>(registry: Registry, metric: Histogram<L>): Histogram<L> {
  const observe = metric.observe.bind(metric) as (data: ObserveDataWithExemplar<L>) => void;
  metric.observe = ((first: LabelValues<L> | ObserveDataWithExemplar<L> | number, value?: number) => {
    if (typeof first === 'number') observe({ value: first });
    else if (value !== undefined) observe({ labels: first as LabelValues<L>, value });
    else observe(first as ObserveDataWithExemplar<L>);
  }) as Histogram<L>['observe'];
  registry.registerMetric(metric);
  return metric;
}

export function createMetrics(options: MetricsOptions = {}): AgentStateMetrics {
  const registry = new Registry();
  if (options.processMetrics ?? true)
    collectDefaultMetrics({
      register: registry,
      prefix: 'agentstate_process_',
      eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS,
    });
  const registers = [registry];
  return {
    registry,
    sessionsActive: new Gauge({
      name: 'agentstate_sessions_active',
      help: 'Sessions not yet expired, by status',
      labelNames: ['status'],
      registers,
    }),
    sessionsCreated: new Counter({
      name: 'agentstate_sessions_created_total',
      help: 'Sessions created',
      labelNames: ['agent'],
      registers,
    }),
    sessionsExpired: new Counter({
      name: 'agentstate_sessions_expired_total',
      help: 'Expired sessions removed by the sweeper',
      registers,
    }),
    turns: new Counter({
      name: 'agentstate_turns_total',
      help: 'Agent turns run, by agent, model and outcome',
      labelNames: ['agent', 'model', 'outcome'],
      registers,
    }),
    turnDuration: withExemplars(
      registry,
      new Histogram({
        name: 'agentstate_turn_duration_seconds',
        help: 'Latency of one agent turn',
        labelNames: ['agent', 'model', 'outcome'],
        buckets: LATENCY_BUCKETS,
        enableExemplars: true,
        registers: [],
      }),
    ),
    modelCallDuration: new Histogram({
      name: 'agentstate_model_call_duration_seconds',
      help: 'Latency of one model call (extract, route, reply), by model, call and outcome',
      labelNames: ['model', 'call', 'outcome'],
      buckets: [...LATENCY_BUCKETS, 30, 60],
      registers,
    }),
    checkpointWriteDuration: new Histogram({
      name: 'agentstate_checkpoint_write_duration_seconds',
      help: 'Latency of writing one checkpoint',
      labelNames: ['adapter'],
      buckets: LATENCY_BUCKETS,
      registers,
    }),
    versionConflicts: new Counter({
      name: 'agentstate_version_conflicts_total',
      help: 'Writes refused because the version they named was stale',
      labelNames: ['kind'],
      registers,
    }),
    actions: new Counter({
      name: 'agentstate_actions_total',
      help: 'Action records reaching a status (PENDING when begun)',
      labelNames: ['status'],
      registers,
    }),
    actionsUnknown: new Gauge({
      name: 'agentstate_actions_unknown',
      help: 'Actions in status UNKNOWN, waiting for a person',
      registers,
    }),
    recoveredRuns: new Counter({
      name: 'agentstate_recovered_runs_total',
      help: 'Interrupted runs resumed from a checkpoint',
      labelNames: ['outcome'],
      registers,
    }),
    sweeperRuns: new Counter({
      name: 'agentstate_sweeper_runs_total',
      help: 'Sweeps of expired sessions',
      labelNames: ['outcome'],
      registers,
    }),
    sweeperDeleted: new Counter({
      name: 'agentstate_sweeper_deleted_total',
      help: 'Expired sessions deleted by sweeps',
      registers,
    }),
    storeErrors: new Counter({
      name: 'agentstate_store_errors_total',
      help: 'Store calls that failed for a reason other than bad input or a version conflict',
      labelNames: ['adapter', 'code'],
      registers,
    }),
    storeRoundTrips: new Counter({
      name: 'agentstate_store_round_trips_total',
      help: 'Statements sent to a SQL database (BEGIN and COMMIT included): on PostgreSQL, round trips',
      labelNames: ['adapter'],
      registers,
      collect() {
        this.reset();
        for (const [adapter, count] of Object.entries(statementsSent))
          if (count > 0) this.inc({ adapter }, count);
      },
    }),
    httpRequests: new Counter({
      name: 'agentstate_http_requests_total',
      help: 'HTTP requests, by route, method and status',
      labelNames: ['route', 'method', 'status'],
      registers,
    }),
    httpDuration: new Histogram({
      name: 'agentstate_http_request_duration_seconds',
      help: 'HTTP request latency',
      labelNames: ['route', 'method'],
      buckets: LATENCY_BUCKETS,
      registers,
    }),
  };
}
