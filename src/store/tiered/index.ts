/**
 * The tiered store: `redis://host:port?durable=<postgres URL, URL-encoded>` (or
 * `tiered:?redis=...&postgres=...`, see url.ts). Sessions and messages live in Redis with native TTLs,
 * with hot copies of open tasks; tasks, task events, actions, checkpoints, long-term memory, leases and
 * request keys live in PostgreSQL, which is the truth for every version check. Leases and request keys are
 * durable on purpose: losing Redis must never let two runners take one session, nor replay a request.
 * When Redis is lost, sessions and messages are gone; every task, action and checkpoint stays, and a new
 * session of the same user finds its open tasks with listTasks. turn.ts states the write order of a turn.
 *
 * Options (one object, never mutated), beyond StoreOptions:
 * - `prefix`: namespace of the Redis keys. Default `agentstate`, or the URL's `?prefix=`.
 * - `schema`: the PostgreSQL schema. Default `agentstate`, or the PostgreSQL URL's `?schema=`.
 * - `max`: PostgreSQL pool size. Default 10.  `connectTimeoutMs`: Redis connect timeout. Default 2000.
 * - `hotTaskTtlSeconds`: lifetime of a hot task copy without writes. Default 3600.
 * - `turnLockMs`: TTL of a session's turn lock (how long a dead holder blocks it). Default 10000.
 * - `afterDurableCommit`: test hook run between the PostgreSQL commit and the Redis write of a turn.
 * Run events (`runEventTtlSeconds`) live in PostgreSQL, written by a turn's durable commit (durable.ts).
 */
import { cryptoRandom, systemClock } from '../../core/clock.js';
import { invalidRequest } from '../../core/errors.js';
import { Checks } from '../core/checks.js';
import { createStateStore } from '../core/create-store.js';
import { openPostgresStore } from '../postgres/index.js';
import { type ConnectOptions, connectClient, createClient } from '../redis/client.js';
import { RedisDriver } from '../redis/driver.js';
import { DEFAULT_PREFIX, parseRedisUrl } from '../redis/index.js';
import type { Ctx as RedisCtx } from '../redis/plan.js';
import { BlobCache } from '../shared/blob-cache.js';
import {
  DEFAULT_RUN_EVENT_TTL_SECONDS,
  DEFAULT_SESSION_TTL_SECONDS,
  type StateStore,
  type StoreOptions,
} from '../types.js';
import { durableDriver } from './durable.js';
import { ADAPTER, rebrand } from './errors.js';
import { DEFAULT_HOT_TTL_SECONDS, HotTasks } from './hot.js';
import { DEFAULT_LOCK_MS, SessionLocks } from './lock.js';
import { defineScripts } from './scripts.js';
import { TieredStore } from './store.js';
import type { AfterDurableCommit } from './turn.js';
import { parseTieredUrl } from './url.js';

export type { AfterDurableCommit } from './turn.js';
export { parseTieredUrl, type TieredUrl } from './url.js';

export interface TieredStoreOptions extends StoreOptions, ConnectOptions {
  readonly prefix?: string;
  readonly schema?: string;
  readonly max?: number;
  readonly hotTaskTtlSeconds?: number;
  readonly turnLockMs?: number;
  readonly afterDurableCommit?: AfterDurableCommit;
}

const PREFIX = /^[A-Za-z0-9_.-]{1,100}$/;

export async function openTieredStore(url: string, options: TieredStoreOptions = {}): Promise<StateStore> {
  const v = new Checks(ADAPTER);
  v.record(options, 'options');
  const parts = parseTieredUrl(url);
  let redisUrl: ReturnType<typeof parseRedisUrl>;
  try {
    redisUrl = parseRedisUrl(parts.redis);
  } catch (error) {
    throw rebrand(error, 'redis');
  }
  const prefix = options.prefix ?? redisUrl.prefix ?? DEFAULT_PREFIX;
  if (!PREFIX.test(prefix)) {
    throw invalidRequest('[tiered] prefix must be 1 to 100 of A-Z a-z 0-9 _ . - (no braces or colons)');
  }
  const defaultTtlSeconds =
    options.defaultSessionTtlSeconds === undefined
      ? DEFAULT_SESSION_TTL_SECONDS
      : v.positiveInt(options.defaultSessionTtlSeconds, 'defaultSessionTtlSeconds');
  const runEventTtlSeconds =
    options.runEventTtlSeconds === undefined
      ? DEFAULT_RUN_EVENT_TTL_SECONDS
      : v.positiveInt(options.runEventTtlSeconds, 'runEventTtlSeconds');
  const hotTtl = v.positiveInt(options.hotTaskTtlSeconds ?? DEFAULT_HOT_TTL_SECONDS, 'hotTaskTtlSeconds');
  const lockMs = v.positiveInt(options.turnLockMs ?? DEFAULT_LOCK_MS, 'turnLockMs');
  const clock = options.clock ?? systemClock;
  const random = options.random ?? cryptoRandom;

  const { redis, scripts } = createClient(redisUrl.connection, options);
  const tiered = defineScripts(redis);
  await connectClient(redis, ADAPTER, redisUrl.db);
  // Checkpoints live in PostgreSQL here: the Redis side keeps none of their blobs.
  const ctx: RedisCtx = { redis, scripts, prefix, clock, checkpointBlobs: new BlobCache(0) };
  const redisDriver = new RedisDriver(ctx);
  const redisStore = createStateStore(redisDriver, {
    clock,
    random,
    defaultSessionTtlSeconds: defaultTtlSeconds,
    runEventTtlSeconds,
  });
  let pg: StateStore;
  try {
    pg = await openPostgresStore({
      url: parts.postgres,
      clock,
      random,
      defaultSessionTtlSeconds: defaultTtlSeconds,
      runEventTtlSeconds,
      // The sessions a task, action, checkpoint or run event names are read where they live.
      sessions: (scope, id) => redisStore.getSession(scope, id),
      ...(options.schema === undefined ? {} : { schema: options.schema }),
      ...(options.max === undefined ? {} : { max: options.max }),
    });
  } catch (error) {
    await redisStore.close();
    throw rebrand(error, 'postgres');
  }
  return new TieredStore(
    {
      redis: ctx,
      redisEnv: {
        adapter: 'redis',
        v: new Checks('redis'),
        clock,
        random,
        defaultTtlSeconds,
        runEventTtlSeconds,
        cursorKey: async () => Buffer.alloc(0),
      },
      pg,
      pgDriver: durableDriver(pg),
      env: {
        adapter: ADAPTER,
        v,
        clock,
        random,
        defaultTtlSeconds,
        runEventTtlSeconds,
        cursorKey: async () => Buffer.alloc(0),
      },
      hot: new HotTasks(redis, tiered, prefix, hotTtl * 1000),
      locks: new SessionLocks(redis, tiered, prefix, lockMs),
      afterDurableCommit: options.afterDurableCommit,
    },
    redisStore,
  );
}
