/**
 * The SQLite and PostgreSQL openers as the main export offers them: each imports its adapter, and so its
 * driver (better-sqlite3, pg), when first called, so that `import 'agentstate'` loads neither.
 */
import type { PostgresStoreOptions } from './postgres/index.js';
import type { SqliteStoreOptions } from './sqlite/index.js';
import type { StateStore } from './types.js';

export { DEFAULT_POSTGRES_SCHEMA } from './postgres/defaults.js';

/** Opens the SQLite store at `path` (src/store/sqlite/index.ts). */
export async function openSqliteStore(path: string, options: SqliteStoreOptions = {}): Promise<StateStore> {
  const sqlite = await import('./sqlite/index.js');
  return sqlite.openSqliteStore(path, options);
}

/** Opens the PostgreSQL store (src/store/postgres/index.ts). */
export async function openPostgresStore(options: PostgresStoreOptions): Promise<StateStore> {
  const postgres = await import('./postgres/index.js');
  return postgres.openPostgresStore(options);
}
