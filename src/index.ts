export * from './core/clock.js';
export * from './core/errors.js';
export * from './core/ids.js';
export * from './core/json.js';
export * from './core/model.js';
export { DEFAULT_STORE_URL, type OpenStoreOptions, openStore } from './store/open.js';
export * from './store/types.js';
export { createMemoryStore, MemoryStore } from './store/memory/index.js';
export { type Sweeper, type SweeperOptions, startSweeper, sweepOnce } from './lifecycle/sweeper.js';
export { type AgentStateMetrics, createMetrics, type MetricsOptions } from './observability/metrics.js';
export { instrumentStore } from './observability/instrumented-store.js';
export * from './context/index.js';
export * from './memory/index.js';
export { openSqliteStore, type SqliteStoreOptions, type SqliteSynchronous } from './store/sqlite/index.js';
export { DEFAULT_POSTGRES_SCHEMA, openPostgresStore, type PostgresStoreOptions } from './store/postgres/index.js';
export type { RedisStoreOptions } from './store/redis/index.js';
export type { AfterDurableCommit, TieredStoreOptions, TieredUrl } from './store/tiered/index.js';
export * from './demo/index.js';
export {
  type CrashReport,
  type CrashTestOptions,
  type CrashTestResult,
  runCrashTest,
} from './harness/crash/index.js';
