/**
 * The library: stores (opened by URL with `openStore`; each driver loads only when its URL is opened), runtime,
 * context, memory, models and the server factory. Harnesses, the demo services and CLI helpers are not here.
 */
export * from './agents/index.js';
export * from './context/index.js';
export * from './core/clock.js';
export * from './core/errors.js';
export * from './core/ids.js';
export * from './core/json.js';
export * from './core/model.js';
export * from './durable/index.js';
export {
  DEFAULT_LIMITS,
  type HttpConfig,
  type HttpConfigInput,
  type HttpLimits,
  loadConfig,
  parseApiKeys,
  resolveConfig,
} from './http/config.js';
export { createRuntimeTurnRunner, type RuntimeSetup } from './http/runtime-runner.js';
export { createServer, type ServerOptions } from './http/server.js';
export { installGracefulShutdown } from './http/shutdown.js';
export type { TurnResponse, TurnRunner } from './http/turn-runner.js';
export { refreshSessionGauge } from './lifecycle/gauge.js';
export { DEFAULT_KEEP_CHECKPOINTS, pruneCompletedRun } from './lifecycle/prune.js';
export {
  DEFAULT_RETENTION_DAYS,
  type RetentionPolicy,
  retentionCutoffs,
  sweepRetentionOnce,
} from './lifecycle/retention.js';
export {
  changeSessionStatus,
  DEFAULT_WAITING_TTL_SECONDS,
  type SessionPolicy,
  sessionStatusPatch,
} from './lifecycle/session-policy.js';
export { type Sweeper, type SweeperOptions, startSweeper, sweepOnce } from './lifecycle/sweeper.js';
export * from './memory/index.js';
export * from './models/index.js';
export { instrumentStore } from './observability/instrumented-store.js';
export { type AgentStateMetrics, createMetrics, type MetricsOptions } from './observability/metrics.js';
export * from './runtime/index.js';
export * from './store/core/index.js';
export { DEFAULT_POSTGRES_SCHEMA, openPostgresStore, openSqliteStore } from './store/drivers.js';
export { createMemoryDriver, createMemoryStore, MemoryDriver, MemoryStore } from './store/memory/index.js';
export { DEFAULT_STORE_URL, type OpenStoreOptions, openStore } from './store/open.js';
export type { PostgresStoreOptions } from './store/postgres/index.js';
export type { RedisStoreOptions } from './store/redis/index.js';
export type { SqliteStoreOptions, SqliteSynchronous } from './store/sqlite/index.js';
export type { AfterDurableCommit, TieredStoreOptions, TieredUrl } from './store/tiered/index.js';
export * from './store/types.js';
