/**
 * Opening the Redis store: `redis://[user:pass@]host:port[/db]?prefix=NAME[&cluster=true]` (or `rediss://`
 * for TLS). `prefix` (default `agentstate`) namespaces every key, so several stores or test runs share a
 * server; `cluster=true` treats host:port as a seed node of a Redis Cluster.
 */
import { systemClock } from '../../core/clock.js';
import { invalidRequest } from '../../core/errors.js';
import { Checks } from '../core/checks.js';
import { createStateStore } from '../core/create-store.js';
import { BlobCache } from '../shared/blob-cache.js';
import type { StateStore, StoreOptions } from '../types.js';
import { ADAPTER, type ConnectOptions, connectClient, createClient } from './client.js';
import { RedisDriver } from './driver.js';

export interface RedisStoreOptions extends StoreOptions, ConnectOptions {
  /** Namespace of every key. Default `agentstate`, or the URL's `?prefix=`. */
  readonly prefix?: string;
  /** Checkpoint blob text kept in memory, in characters. Default 8 Mi (BLOB_CACHE_CHARS); 0: none. */
  readonly checkpointCacheChars?: number;
}

export const DEFAULT_PREFIX = 'agentstate';
const PREFIX = /^[A-Za-z0-9_.-]{1,100}$/;

/** Splits our own query parameters off the URL; the rest goes to ioredis. */
export function parseRedisUrl(url: string): {
  connection: string;
  prefix: string | null;
  cluster: boolean;
  /** The database the URL names (`/N`), null when it names none (0). */
  db: number | null;
} {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw invalidRequest(`[redis] not a URL: ${JSON.stringify(url)}`);
  }
  if (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') {
    throw invalidRequest('[redis] the URL must start with redis:// or rediss://');
  }
  if (parsed.searchParams.has('durable')) {
    throw invalidRequest(
      '[redis] ?durable= is for the tiered store, which this adapter is not; remove it for plain Redis',
    );
  }
  const prefix = parsed.searchParams.get('prefix');
  const cluster = parsed.searchParams.get('cluster');
  if (cluster !== null && cluster !== 'true' && cluster !== 'false') {
    throw invalidRequest('[redis] ?cluster= must be true or false');
  }
  parsed.searchParams.delete('prefix');
  parsed.searchParams.delete('cluster');
  const dbText = /^\/(\d{1,9})?$/.exec(parsed.pathname === '' ? '/' : parsed.pathname);
  if (dbText === null) {
    throw invalidRequest(
      `[redis] the URL's path must be a database number (/0, /1, ...), got ${JSON.stringify(parsed.pathname)}`,
    );
  }
  const db = dbText[1] === undefined ? null : Number(dbText[1]);
  if (cluster === 'true' && db !== null && db !== 0) {
    throw invalidRequest('[redis] a Redis Cluster has only database 0; remove the /N from the URL');
  }
  return { connection: parsed.toString(), prefix, cluster: cluster === 'true', db };
}

export async function openRedisStore(url: string, options: RedisStoreOptions = {}): Promise<StateStore> {
  const { connection, prefix: urlPrefix, cluster, db } = parseRedisUrl(url);
  const prefix = options.prefix ?? urlPrefix ?? DEFAULT_PREFIX;
  if (!PREFIX.test(prefix)) {
    throw invalidRequest('[redis] prefix must be 1 to 100 of A-Z a-z 0-9 _ . - (no braces or colons)');
  }
  const cacheChars = new Checks(ADAPTER).intOption(
    options.checkpointCacheChars,
    'checkpointCacheChars',
    undefined,
    0,
  );
  const { redis, scripts } = createClient(connection, options, cluster);
  const driver = new RedisDriver({
    redis,
    scripts,
    prefix,
    clock: options.clock ?? systemClock,
    checkpointBlobs: new BlobCache(cacheChars),
  });
  // The store checks its options before the connection is made.
  const store = createStateStore(driver, options);
  await connectClient(redis, ADAPTER, cluster ? null : db);
  return store;
}
