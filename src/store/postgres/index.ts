/**
 * The PostgreSQL store (`postgres://...` or `postgresql://...`): durable, shared by any number of server
 * instances. The SQL is the one the SQLite store runs (src/store/sql); only the executor differs.
 *
 * Options beyond StoreOptions (one object, never mutated):
 * - `url`: a libpq connection URL. `?schema=name` picks the schema and `?max=N` the pool's size (both
 *   removed before connecting; the `max` option, when given, wins).
 * - `pool`: a `pg` Pool of the caller's, used instead of `url`; it stays the caller's to end. Its
 *   connections get `search_path` set to the schema when first used by the store.
 * - `schema`: the schema of every table, created when absent. Default `agentstate` (or the URL's).
 * - `max`: connections of the store's own pool. Default 10.
 * - `idleTimeoutMs`: a connection of the store's own pool left idle this long is closed. Default 300000
 *   (5 minutes; `pg`'s own default, 10 s, closed most of the pool between two bursts of a bursty load, and
 *   the next burst paid a connection and its statements' preparation per client again). 0: never closed.
 * - `warmPool`: open all `max` connections of the store's own pool before the store is returned (a server
 *   does: the first burst of requests then finds them open). Default false (one connection, for migrations).
 * - `connectTimeoutMs`: how long a call waits for a connection of the store's own pool before it fails with
 *   `store_unavailable`. Default 10000.
 * - `reclaimLongTransactionMs`: a transaction of the database open longer than this keeps the storage
 *   reclaim after a sweep from rebuilding indexes or truncating tables it holds (docs/lifecycle.md).
 *   Default 1000.
 * - `reclaimLockTimeoutMs`: how long a step of that reclaim (a VACUUM, an index rebuild, a drop of a
 *   half-built copy) waits for a lock before it gives up and leaves the table for the next sweep. Default 2000.
 * - `checkpointCacheChars`: how much checkpoint data (characters of blob text) the store keeps in memory of
 *   what it wrote and read, so a read fetches only the blobs it does not hold. Default 8 Mi; 0: none kept.
 * JSON values are stored as JSON text (not jsonb, which refuses \u0000 inside strings), so every plain-JSON
 * value round-trips unchanged; audit queries cast with `::jsonb`.
 */
import pg from 'pg';
import { storeUnavailable } from '../../core/errors.js';
import type { Session } from '../../core/model.js';
import { Checks } from '../core/checks.js';
import { SqlCoreStore } from '../sql/core-store.js';
import { migrate } from '../sql/migrate.js';
import type { ReadScope, StateStore, StoreOptions } from '../types.js';
import { DEFAULT_POSTGRES_SCHEMA } from './defaults.js';
import { postgresDriver } from './driver.js';

export interface PostgresStoreOptions extends StoreOptions {
  readonly url?: string;
  readonly pool?: pg.Pool;
  readonly schema?: string;
  readonly max?: number;
  readonly idleTimeoutMs?: number;
  readonly warmPool?: boolean;
  readonly connectTimeoutMs?: number;
  readonly reclaimLongTransactionMs?: number;
  readonly reclaimLockTimeoutMs?: number;
  /**
   * Internal (the tiered store): the sessions live elsewhere and are read there, when a task, action or
   * checkpoint names one; this database stores none. Default: in this database.
   */
  readonly sessions?: (scope: ReadScope, id: string) => Promise<Session | null>;
  /** False: every call takes the store core's generic path, none of the driver's fast paths. Default true. */
  readonly fastPaths?: boolean;
  /** Checkpoint blob text kept in memory, in characters. Default 8 Mi (BLOB_CACHE_CHARS); 0: none. */
  readonly checkpointCacheChars?: number;
}

/** How long an idle connection of the store's own pool stays open (see `idleTimeoutMs`). */
export const DEFAULT_POSTGRES_IDLE_TIMEOUT_MS = 300_000;

export { DEFAULT_POSTGRES_SCHEMA };

const SCHEMA_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/** Splits `?schema=` and `?max=` off a connection URL. */
export function parsePostgresUrl(url: string): {
  connectionString: string;
  schema: string | null;
  max: number | null;
} {
  const checks = new Checks('postgres');
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return checks.fail(`${JSON.stringify(url)} is not a postgres:// URL`);
  }
  if (parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:') {
    checks.fail(`${JSON.stringify(url)} is not a postgres:// URL`);
  }
  const schema = parsed.searchParams.get('schema');
  const maxText = parsed.searchParams.get('max');
  if (maxText !== null && !/^[1-9][0-9]{0,5}$/.test(maxText)) {
    checks.fail(`?max= must be a positive integer (connections of the pool), got ${JSON.stringify(maxText)}`);
  }
  parsed.searchParams.delete('schema');
  parsed.searchParams.delete('max');
  return { connectionString: parsed.toString(), schema, max: maxText === null ? null : Number(maxText) };
}

/** Opens (creating the schema and migrating it when needed) a PostgreSQL store. */
export async function openPostgresStore(options: PostgresStoreOptions): Promise<StateStore> {
  const checks = new Checks('postgres');
  checks.record(options, 'options');
  if ((options.url === undefined) === (options.pool === undefined))
    checks.fail('give exactly one of url and pool');
  const fromUrl = options.url === undefined ? null : parsePostgresUrl(options.url);
  const schema = options.schema ?? fromUrl?.schema ?? DEFAULT_POSTGRES_SCHEMA;
  if (!SCHEMA_NAME.test(schema)) checks.fail(`schema ${JSON.stringify(schema)} must be a plain identifier`);
  const max = options.max === undefined ? (fromUrl?.max ?? 10) : checks.positiveInt(options.max, 'max');
  const idleTimeoutMs = checks.intOption(
    options.idleTimeoutMs,
    'idleTimeoutMs',
    DEFAULT_POSTGRES_IDLE_TIMEOUT_MS,
    0,
  );
  const connectTimeoutMs = checks.intOption(options.connectTimeoutMs, 'connectTimeoutMs', 10_000, 1);
  const reclaimLongTransactionMs = checks.intOption(
    options.reclaimLongTransactionMs,
    'reclaimLongTransactionMs',
    undefined,
    1,
  );
  const reclaimLockTimeoutMs = checks.intOption(
    options.reclaimLockTimeoutMs,
    'reclaimLockTimeoutMs',
    undefined,
    1,
  );
  if (options.defaultSessionTtlSeconds !== undefined) {
    checks.positiveInt(options.defaultSessionTtlSeconds, 'defaultSessionTtlSeconds');
  }
  checks.intOption(options.checkpointCacheChars, 'checkpointCacheChars', undefined, 0);
  const ownPool =
    fromUrl === null
      ? null
      : new pg.Pool({
          connectionString: fromUrl.connectionString,
          max,
          // pg-pool reads 0 as "never close an idle connection".
          idleTimeoutMillis: idleTimeoutMs,
          connectionTimeoutMillis: connectTimeoutMs,
          options: `-c search_path="${schema}"`,
        });
  ownPool?.on('error', () => undefined);
  const pool = ownPool ?? (options.pool as pg.Pool);
  const driver = postgresDriver({
    pool,
    schema,
    searchPathSet: ownPool !== null,
    ...(reclaimLongTransactionMs === undefined ? {} : { reclaimLongTransactionMs }),
    ...(reclaimLockTimeoutMs === undefined ? {} : { reclaimLockTimeoutMs }),
  });
  const end = async () => {
    if (ownPool !== null) await ownPool.end();
  };
  try {
    await migrate(driver);
    if (options.warmPool === true && ownPool !== null) await warm(ownPool, max);
  } catch (error) {
    await end().catch(() => undefined);
    throw storeUnavailable('postgres', error);
  }
  return new SqlCoreStore('postgres', driver, options, end);
}

/** Opens `count` connections of the pool at once (each asks the server once), then gives them back idle. */
async function warm(pool: pg.Pool, count: number): Promise<void> {
  const clients: pg.PoolClient[] = [];
  try {
    const opened = await Promise.allSettled(Array.from({ length: count }, () => pool.connect()));
    for (const result of opened) if (result.status === 'fulfilled') clients.push(result.value);
    const failed = opened.find((result) => result.status === 'rejected');
    if (failed !== undefined) throw failed.reason;
    await Promise.all(clients.map((client) => client.query('SELECT 1')));
  } finally {
    for (const client of clients) client.release();
  }
}
