/**
 * `agentstate serve`: the HTTP API on one store, with the expiry sweeper and graceful shutdown; with
 * `--workers N`, N such processes on one port (serve-cluster.ts).
 * Logs are JSON lines on stdout; the start banner (URL, store, how to chat) goes to stderr.
 */
import { availableParallelism } from 'node:os';
import type { Command } from 'commander';
import type { Registry } from 'prom-client';
import type { MetricJson, MetricsFormat } from '../../observability/exposition.js';
import {
  assertStartable,
  DEFAULT_HOST,
  DEFAULT_PORT,
  loadConfig,
  modelsOfConfigFile,
} from '../../server/config.js';
import { buildModelRegistry, describeModel, type ModelsSpec, resolveModels } from '../../server/models.js';
import type { TurnThreads } from '../../server/turn-threads/pool.js';
import { MAX_TURN_THREADS } from '../../server/turn-threads/pool.js';
import { openStore } from '../../store/open.js';
import { CliError, isInProcessStore, prepareDataDir, storeUrlOf } from '../context.js';
import { parsePort, portFromEnv } from './parse.js';
import {
  type ListeningMessage,
  parseWorkers,
  runClusterPrimary,
  STOP_MESSAGE,
  workerIndex,
} from './serve-cluster.js';
import {
  addRecoveryOptions,
  prepareRecovery,
  type RecoveryCliOptions,
  type ServeRecovery,
} from './serve-recovery.js';

/** The main thread's metrics with every turn thread's added (their store calls, checkpoint writes). */
async function withThreadMetrics(
  registry: Registry,
  pool: TurnThreads,
  format: MetricsFormat,
): Promise<string> {
  const { renderSummed } = await import('../../observability/exposition.js');
  const all = [await registry.getMetricsAsJSON(), ...(await pool.metricsJson())];
  return renderSummed(all as MetricJson[][], format);
}

interface ServeOptions extends RecoveryCliOptions {
  readonly store?: string;
  readonly host: string;
  readonly port?: number;
  readonly agents?: string;
  readonly config?: string;
  readonly dataDir: string;
  readonly sweepIntervalMs?: string;
  readonly workers: string;
  readonly turnThreads: string;
  readonly model?: string;
  readonly openaiModel?: string;
}

/** Turn threads `auto` starts at most (past a few, the store's write lock or the database is the limit). */
export const AUTO_TURN_THREADS_MAX = 4;

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '::1', '[::1]', '']);

/**
 * Whether the store URL names a database server on this machine (PostgreSQL or Redis on a loopback address or
 * a Unix socket, in a tiered URL too): its server needs a core of its own while turns run.
 */
export function storeServerIsLocal(storeUrl: string): boolean {
  let text = storeUrl;
  try {
    text = decodeURIComponent(storeUrl);
  } catch {
    // Not percent-encoded text: read as given.
  }
  // Each URL up to the next one (a Redis URL's ?durable= names a PostgreSQL one), a space or an &.
  const urls = text.match(/(postgres(ql)?|rediss?):\/\/((?!(postgres(ql)?|rediss?):\/\/)[^\s&])*/g) ?? [];
  return urls.some((text) => {
    try {
      const url = new URL(text);
      if (url.searchParams.get('host')?.startsWith('/')) return true;
      return LOOPBACK_HOSTS.has(url.hostname) || url.hostname.startsWith('127.');
    } catch {
      return false;
    }
  });
}

/** Whether every thread can open the store the URL names (one in-process store cannot be shared). */
function storeSharedByThreads(storeUrl: string): boolean {
  return !isInProcessStore(storeUrl);
}

/** `--workers N` (N > 1) runs N processes: each must open the same store, so not one that lives in a process. */
export function assertWorkersCanShare(storeUrl: string, workers: number): void {
  if (workers > 1 && isInProcessStore(storeUrl)) {
    throw new CliError(
      `--workers ${workers} needs a store every process can open (sqlite:FILE, postgres://, redis://, tiered:); ${storeUrl} lives in one process`,
    );
  }
}

/**
 * `--turn-threads`: 0 runs turns on the main thread; N (1-64) on N threads of their own; `auto` (the
 * default) one per core but the main thread's, up to AUTO_TURN_THREADS_MAX (one core fewer when the store's
 * database server runs on this machine: PostgreSQL or Redis on a loopback address or a Unix socket), or 0
 * where threads cannot help or work: an in-process store, a cluster of processes (`--workers`, which use the
 * cores already), an `--agents` module that is not JavaScript (a thread cannot load TypeScript; give the
 * number to try).
 */
export function parseTurnThreads(
  text: string,
  storeUrl: string,
  workers: number,
  agentsModule?: string,
): number {
  if (text === 'auto') {
    if (!storeSharedByThreads(storeUrl) || workers > 1) return 0;
    if (agentsModule !== undefined && !/\.(js|mjs|cjs)$/.test(agentsModule)) return 0;
    // The main thread keeps a core for HTTP and a database server on this machine one for the turns'
    // statements: on 2 cores a thread more than that made each turn dearer and no faster (BENCHMARKS.md).
    const threads = availableParallelism() - 1 - (storeServerIsLocal(storeUrl) ? 1 : 0);
    return Math.max(0, Math.min(threads, AUTO_TURN_THREADS_MAX));
  }
  const n = /^\d+$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isInteger(n) || n < 0 || n > MAX_TURN_THREADS) {
    throw new CliError(
      `--turn-threads must be auto or a whole number from 0 to ${MAX_TURN_THREADS}, got ${JSON.stringify(text)}`,
    );
  }
  if (n > 0 && !storeSharedByThreads(storeUrl)) {
    throw new CliError(
      `--turn-threads needs a store every thread can open (sqlite:FILE, postgres://, redis://, tiered:); ${storeUrl} lives in one thread`,
    );
  }
  if (n > 0 && workers > 1) {
    throw new CliError('--turn-threads and --workers cannot be combined: use one or the other');
  }
  return n;
}

/** The banner's lines about models: the default, the others a session may name, the agents' own. */
export function modelLines(models: ModelsSpec): string[] {
  const others = Object.keys(models.available).filter((name) => name !== models.default);
  const agents = Object.entries(models.agents);
  return [
    `  model: ${describeModel(models, models.default)}, the default`,
    ...(others.length === 0
      ? []
      : [
          `  also:  ${others.map((name) => describeModel(models, name)).join(', ')} ("model" of a new session)`,
        ]),
    ...(agents.length === 0
      ? []
      : [`  by agent: ${agents.map(([agent, name]) => `${agent}: ${name}`).join(', ')}`]),
  ];
}

/** A model the configuration gives an agent the server does not run is a mistake worth stopping for. */
function checkAgentModels(models: ModelsSpec, agentNames: readonly string[]): void {
  for (const agent of Object.keys(models.agents)) {
    if (!agentNames.includes(agent)) {
      throw new CliError(
        `models.agents.${agent}: no agent named ${JSON.stringify(agent)}; agents: ${agentNames.join(', ')}`,
      );
    }
  }
}

export function registerServeCommands(program: Command): void {
  addRecoveryOptions(program.command('serve'))
    .description('serve the HTTP API (SPEC 5)')
    .option('--store <url>', 'store URL (env AGENTSTATE_STORE, default sqlite:./.agentstate/agentstate.db)')
    .option(
      '--host <host>',
      'address to bind (env AGENTSTATE_HOST)',
      process.env.AGENTSTATE_HOST ?? DEFAULT_HOST,
    )
    .option(
      '--port <port>',
      `port; 0 picks a free one (env AGENTSTATE_PORT, default ${DEFAULT_PORT})`,
      parsePort,
    )
    .option(
      '--agents <module>',
      'a module exporting more agents (and their tools) for turns, besides the built-in ones',
    )
    .option('--data-dir <dir>', 'where the demo tools keep their work and ledgers', '.agentstate')
    .option(
      '--workers <n>',
      'server processes sharing the port (node:cluster); use the cores with a server store (env AGENTSTATE_WORKERS)',
      process.env.AGENTSTATE_WORKERS ?? '1',
    )
    .option(
      '--turn-threads <n>',
      'threads that run turns, each with its own store connection: a number (0: the main thread) or auto, one per core but one left to the main thread, up to 4, one fewer for a database server on this machine (env AGENTSTATE_TURN_THREADS)',
      process.env.AGENTSTATE_TURN_THREADS ?? 'auto',
    )
    .option(
      '--config <file>',
      'a JSON configuration file (apiKeys, jwtSecret, limits, models); the environment overrides it',
    )
    .option(
      '--model <name>',
      'the default model of turns: rules (offline), openai (OPENAI_BASE_URL, OPENAI_API_KEY) or one the config file names (env AGENTSTATE_MODEL)',
    )
    .option(
      '--openai-model <name>',
      "the openai model's name at its endpoint, e.g. gpt-4o-mini or llama3.1 (env AGENTSTATE_OPENAI_MODEL)",
    )
    .action(async (options: ServeOptions) => {
      // Every option and variable is checked before anything starts (store, airline, threads).
      const port = options.port ?? portFromEnv(process.env.AGENTSTATE_PORT, DEFAULT_PORT);
      const url = storeUrlOf(options);
      const workers = parseWorkers(options.workers);
      assertWorkersCanShare(url, workers);
      const turnThreads = parseTurnThreads(options.turnThreads, url, workers, options.agents);
      const config = loadConfig(process.env, options.config, { host: options.host, port });
      assertStartable(config);
      const models = resolveModels({
        env: process.env,
        file: modelsOfConfigFile(options.config),
        ...(options.model === undefined ? {} : { model: options.model }),
        ...(options.openaiModel === undefined ? {} : { openaiModel: options.openaiModel }),
      });
      const worker = workerIndex();
      prepareDataDir(options.dataDir);
      if (workers > 1 && worker === null) {
        await runClusterPrimary({ workers, storeUrl: url, dataDir: options.dataDir });
        return;
      }
      // Traces when an OTEL_* variable asks for them (nothing is loaded otherwise): started before the
      // store and the server are made, since both are traced from their start.
      const { startTracing } = await import('../../observability/tracing-setup.js');
      const tracing = await startTracing(process.env, { http: true });
      const { createMetrics } = await import('../../observability/metrics.js');
      const { instrumentStore } = await import('../../observability/instrumented-store.js');
      const metrics = createMetrics();
      // A worker answers the primary's metrics requests from now on, so a scrape during its start never waits.
      // (A worker runs no turn threads: --workers and --turn-threads are not combined.)
      const collectMetrics =
        worker === null
          ? undefined
          : (await import('../../observability/cluster-metrics.js')).workerMetricsSource(async () => [
              await metrics.registry.getMetricsAsJSON(),
            ]);
      // A server keeps its PostgreSQL connections open from the start: its first burst finds them ready.
      const raw = await openStore(url, { postgresWarmPool: true });
      const store = instrumentStore(raw, metrics);
      // Loaded here, not at the top, so that the other commands start fast. The server factory is the
      // library's, as an application of its own would import it.
      const { createServer, installGracefulShutdown } = await import('../../index.js');
      const { startSweeper } = await import('../../lifecycle/sweeper.js');
      const { linkRuntime } = await import('./runtime-link.js');
      const { createRuntimeTurnRunner } = await import('../../server/runtime-runner.js');
      let runtime: Awaited<ReturnType<typeof linkRuntime>> | null = null;
      let threads: TurnThreads | null = null;
      let recovering: ServeRecovery | null = null;
      let log: import('./serve-recovery.js').RecoveryLog | null = null;
      try {
        // The instance's identity, claimed before any turn runs: its runs are marked with it.
        recovering = await prepareRecovery(store, { ...options, worker }, () => {
          if (log === null) throw new Error('recovery started before the server');
          return log;
        });
        const { meteredModel } = await import('../../observability/model-metrics.js');
        runtime = await linkRuntime(
          options.dataDir,
          options.agents,
          buildModelRegistry(models, (model) => meteredModel(model, metrics)),
        );
        checkAgentModels(models, runtime.agentNames);
        const linked = runtime;
        const setup =
          recovering === null ? runtime.setup : { ...runtime.setup, recovery: recovering.recovery };
        const local = createRuntimeTurnRunner(store, setup, models);
        if (turnThreads > 0) {
          const { startTurnThreads } = await import('../../server/turn-threads/pool.js');
          threads = await startTurnThreads({
            threads: turnThreads,
            storeUrl: url,
            modules: runtime.modules,
            models,
            local,
            ...(recovering === null ? {} : { recovery: recovering.recovery }),
            onThreadExit: (index, reason) =>
              process.stderr.write(
                `agentstate: turn thread ${index} stopped (${reason}); starting it again\n`,
              ),
          });
        }
        const pool = threads;
        const app = await createServer({
          store,
          config,
          turns: pool ?? local,
          metrics,
          ...(collectMetrics
            ? { collectMetrics }
            : pool
              ? {
                  collectMetrics: (format: MetricsFormat) =>
                    withThreadMetrics(metrics.registry, pool, format),
                }
              : {}),
        });
        // A storage reclaim that fails after a sweep (PostgreSQL VACUUM / REINDEX) never fails the sweep: log it.
        const { SqlCoreStore } = await import('../../store/sql/core-store.js');
        if (raw instanceof SqlCoreStore) {
          raw.onReclaimError = (error) =>
            app.log.error({ err: error }, 'storage reclaim after a sweep failed');
        }
        // One sweeper per cluster is enough (several would be safe, only wasteful): worker 0's.
        const sweeper =
          worker === null || worker === 0
            ? startSweeper({
                store,
                metrics,
                onError: (error) => app.log.error({ err: error }, 'sweep failed'),
              })
            : null;
        // In a cluster the primary coordinates the stop: Ctrl-C reaches every process of the group, and the
        // primary then asks each worker over IPC (the same shutdown, joined, never a second signal).
        if (worker !== null) process.on('SIGINT', () => undefined);
        const stopNow = installGracefulShutdown(app, {
          ...(worker === null ? {} : { signals: ['SIGTERM'] as NodeJS.Signals[] }),
          afterClose: async () => {
            await recovering?.stop();
            await pool?.close();
            await sweeper?.stop();
            await linked.close();
            await store.close();
            await tracing?.shutdown();
          },
        });
        if (worker !== null) {
          process.on('message', (message: unknown) => {
            if ((message as { type?: unknown } | null)?.type === STOP_MESSAGE) void stopNow();
          });
        }
        const address = await app.listen({ host: config.host, port: config.port });
        // Runs a dead server left interrupted are completed from now on, at once and on an interval.
        log = app.log;
        recovering?.start(pool ?? local, runtime.agentNames);
        const auth =
          config.apiKeys.size === 0
            ? 'no API keys: unauthenticated, loopback only, tenant "default"'
            : `${config.apiKeys.size} tenant key(s); user tokens from POST /v1/tokens`;
        const banner = [
          `agentstate serving ${address}`,
          `  store: ${url} (${store.adapter})`,
          `  auth:  ${auth}`,
          `  docs:  ${address}/docs`,
          `  agents: ${runtime.agentNames.join(', ')}`,
          ...modelLines(models),
          `  turns: ${pool ? `on ${pool.size} thread(s) of their own` : 'on the main thread'}`,
          `  chat:  agentstate chat --server ${address} --agent flight_booking`,
          '',
        ].join('\n');
        // A worker tells the primary, which prints the banner once every worker listens.
        if (worker === null) process.stderr.write(banner);
        else process.send?.({ type: 'agentstate:listening', address, banner } satisfies ListeningMessage);
      } catch (error) {
        await threads?.close();
        await runtime?.close();
        await store.close();
        throw error;
      }
    });
}
