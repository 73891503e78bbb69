/**
 * The ioredis connection: fails fast while Redis is down (no offline queue, no silent resend of a command
 * whose reply was lost) and reconnects on its own afterwards. Scripts are defined once with `defineCommand` (EVALSHA, with EVAL
 * when the server lost its script cache after a restart).
 */
import { Cluster, Redis } from 'ioredis';
import { AgentStateError, storeUnavailable } from '../../core/errors.js';
import { RETENTION_LUA } from './retention-script.js';
import {
  CHECKPOINT_READ_LUA,
  CLAIM_OWNERS_LUA,
  PLAN_LUA,
  RELEASE_OWNERS_LUA,
  REMOVE_DUE_LUA,
  SWEEP_RUN_EVENTS_LUA,
  SWEEP_SESSION_LUA,
} from './scripts.js';

export const ADAPTER = 'redis';

export type ScriptArg = string | number | Buffer;
export type ScriptFn = (numKeys: number, ...args: ScriptArg[]) => Promise<unknown>;

export interface ConnectOptions {
  /** Milliseconds to wait for a connection. Default 2000. */
  readonly connectTimeoutMs?: number;
}

/** The Lua scripts, each defined on the client as `agentstate_<name>` (EVALSHA, EVAL when not cached). */
const SCRIPTS = {
  plan: PLAN_LUA,
  sweepSession: SWEEP_SESSION_LUA,
  checkpointRead: CHECKPOINT_READ_LUA,
  retention: RETENTION_LUA,
  releaseOwners: RELEASE_OWNERS_LUA,
  claimOwners: CLAIM_OWNERS_LUA,
  sweepRunEvents: SWEEP_RUN_EVENTS_LUA,
  removeDue: REMOVE_DUE_LUA,
} as const;

export type RedisScripts = { readonly [name in keyof typeof SCRIPTS]: ScriptFn };

function bound(redis: Redis, name: string): ScriptFn {
  const fn = (redis as unknown as Record<string, ScriptFn>)[`agentstate_${name}`];
  if (fn === undefined) throw new AgentStateError('internal', `[redis] script ${name} is not defined`);
  return fn.bind(redis);
}

/** A Redis Cluster client from a `redis://` URL naming one seed node (its credentials and TLS apply to all). */
function createCluster(url: string, options: ConnectOptions): Redis {
  const parsed = new URL(url);
  const cluster = new Cluster([{ host: parsed.hostname, port: Number(parsed.port || 6379) }], {
    lazyConnect: true,
    enableOfflineQueue: false,
    // ioredis refuses auto-pipelines whose keys fall in different slots; commands still run concurrently.
    enableAutoPipelining: false,
    clusterRetryStrategy: (times) => Math.min(50 * times, 500),
    redisOptions: {
      ...(parsed.username === '' ? {} : { username: decodeURIComponent(parsed.username) }),
      ...(parsed.password === '' ? {} : { password: decodeURIComponent(parsed.password) }),
      ...(parsed.protocol === 'rediss:' ? { tls: {} } : {}),
      maxRetriesPerRequest: 1,
      autoResendUnfulfilledCommands: false,
      connectTimeout: options.connectTimeoutMs ?? 2000,
    },
  });
  // Both clients have the same command methods; the store only uses single-key commands and scripts
  // whose keys share one slot, which a cluster client routes by that slot.
  return cluster as unknown as Redis;
}

export function createClient(
  url: string,
  options: ConnectOptions = {},
  cluster = false,
): { redis: Redis; scripts: RedisScripts } {
  const redis = cluster
    ? createCluster(url, options)
    : new Redis(url, {
        lazyConnect: true,
        enableOfflineQueue: false,
        maxRetriesPerRequest: 1,
        // A command whose reply was lost may have run: fail it (store_unavailable) rather than resend it.
        autoResendUnfulfilledCommands: false,
        enableAutoPipelining: true,
        connectTimeout: options.connectTimeoutMs ?? 2000,
        retryStrategy: (times) => Math.min(50 * times, 500),
      });
  // Errors surface on the calls that fail; without a listener ioredis would log every reconnect attempt.
  redis.on('error', () => {});
  const scripts: Record<string, ScriptFn> = {};
  for (const [name, lua] of Object.entries(SCRIPTS)) {
    redis.defineCommand(`agentstate_${name}`, { lua });
    scripts[name] = bound(redis, name);
  }
  return { redis, scripts: scripts as RedisScripts };
}

/** Replies that mean "not now" (loading, failover, cluster reconfiguring, out of memory): unavailable. */
const TRANSIENT_REPLY = /^(LOADING|READONLY|MASTERDOWN|CLUSTERDOWN|TRYAGAIN|BUSY|OOM|NOREPLICAS|MOVED|ASK)\b/;

/** A reply from Redis that is not transient becomes `internal`; anything else is left as it is. */
export function replyError(error: unknown): unknown {
  if (error instanceof Error && error.name === 'ReplyError' && !TRANSIENT_REPLY.test(error.message)) {
    return new AgentStateError('internal', `[redis] ${error.message}`, { cause: error });
  }
  return error;
}

/** Turns a driver error into an AgentStateError: a reply from Redis is internal, anything else unavailable. */
export function mapError(error: unknown): AgentStateError {
  const mapped = replyError(error);
  if (!(mapped instanceof AgentStateError)) return storeUnavailable(ADAPTER, error);
  if (mapped.message.startsWith(`[${ADAPTER}]`)) return mapped;
  const options = {
    cause: mapped.cause,
    ...(mapped.details === undefined ? {} : { details: mapped.details }),
  };
  return new AgentStateError(mapped.code, `[${ADAPTER}] ${mapped.message}`, options);
}

/**
 * Connects, and makes sure the client is in the database the URL names (`db`, null for none or a cluster):
 * ioredis selects it while it connects but, when the server has no such database, only emits an error and
 * goes on in database 0, among another database's keys. Selecting it again here fails instead.
 */
export async function connectClient(redis: Redis, adapter: string, db: number | null): Promise<void> {
  // connect() rejects with "Connection is closed."; the error event before it says why (ECONNREFUSED ...).
  let cause: unknown = null;
  const onError = (error: unknown) => {
    cause = error;
  };
  redis.on('error', onError);
  try {
    await redis.connect();
  } catch (error) {
    redis.disconnect();
    throw storeUnavailable(adapter, cause ?? error);
  } finally {
    redis.off('error', onError);
  }
  if (db === null || db === 0) return;
  try {
    await redis.select(db);
  } catch (error) {
    redis.disconnect();
    throw new AgentStateError(
      'invalid_request',
      `[${adapter}] the URL names Redis database ${db}, which the server does not have (${error instanceof Error ? error.message : String(error)})`,
    );
  }
}
