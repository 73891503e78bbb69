/**
 * Opening a store from a URL (SPEC 3). Adapters are imported on demand so that, for example, a process
 * on SQLite never loads the PostgreSQL or Redis drivers.
 */
import { invalidRequest } from '../core/errors.js';
import type { StateStore, StoreOptions } from './types.js';

export const DEFAULT_STORE_URL = 'sqlite:./.agentstate/agentstate.db';

export interface OpenStoreOptions extends StoreOptions {
  /** SQLite `synchronous` pragma: 'OFF' | 'NORMAL' | 'FULL' | 'EXTRA'. Default 'NORMAL' (safe in WAL mode). */
  readonly sqliteSynchronous?: 'OFF' | 'NORMAL' | 'FULL' | 'EXTRA';
  /**
   * SQLite: WAL checkpoints in a worker thread every 128 commits and every this many ms (at most 2^31 - 1);
   * 0: by the committing connection. Default 1000.
   */
  readonly sqliteCheckpointMs?: number;
  /** PostgreSQL: open every connection of the store's pool before it is returned (`warmPool`). */
  readonly postgresWarmPool?: boolean;
  /** SQLite, PostgreSQL, Redis: checkpoint blob text kept in memory, in characters (8 Mi; 0: none). */
  readonly checkpointCacheChars?: number;
}

export async function openStore(
  url: string = DEFAULT_STORE_URL,
  options: OpenStoreOptions = {},
): Promise<StateStore> {
  const scheme = url.slice(0, url.indexOf(':') + 1);
  switch (scheme) {
    case 'memory:': {
      const { createMemoryStore } = await import('./memory/index.js');
      return createMemoryStore(options);
    }
    case 'sqlite:': {
      const { openSqliteStore } = await import('./sqlite/index.js');
      return openSqliteStore(url.slice('sqlite:'.length), options);
    }
    case 'redis:':
    case 'rediss:': {
      if (new URLSearchParams(url.split('?')[1] ?? '').has('durable')) {
        const { openTieredStore } = await import('./tiered/index.js');
        return openTieredStore(url, options);
      }
      const { openRedisStore } = await import('./redis/index.js');
      return openRedisStore(url, options);
    }
    case 'tiered:': {
      const { openTieredStore } = await import('./tiered/index.js');
      return openTieredStore(url, options);
    }
    case 'postgres:':
    case 'postgresql:': {
      const { openPostgresStore } = await import('./postgres/index.js');
      const { postgresWarmPool, ...rest } = options;
      return openPostgresStore({ ...rest, url, ...(postgresWarmPool === true ? { warmPool: true } : {}) });
    }
    default:
      throw invalidRequest(
        `unknown store URL ${JSON.stringify(url)}: use memory:, sqlite:PATH, postgres://..., redis://..., redis://...?durable=postgres://... or tiered:?redis=...&postgres=...`,
      );
  }
}
