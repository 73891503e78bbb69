/**
 * Storage back after sweeps on PostgreSQL. A DELETE leaves dead tuples and index entries behind; the relation
 * files keep their size. After a sweep, for the tables that lost many rows and that this role owns:
 *
 * 1. `VACUUM`, then `ANALYZE`: dead tuples go, and the empty pages at the end of the heap are truncated. The
 *    truncation takes ACCESS EXCLUSIVE only when it is free (retrying for up to 5 s), holds it for the
 *    truncate and hands it back within ~20 ms when a statement waits for the table: a turn can wait that
 *    long. A table that a transaction open for more than a second has locked is vacuumed without the
 *    truncation (which would wait those 5 s for nothing). Never VACUUM FULL, whose ACCESS EXCLUSIVE lock
 *    would stop every read and write of the table while it rewrites it.
 * 2. `REINDEX INDEX CONCURRENTLY` of each index that is bloated (see `indexBloated`): a btree never gives
 *    its empty pages back by itself. The concurrent rebuild lets reads and writes go on, but holds SHARE
 *    UPDATE EXCLUSIVE on the table for the whole build (DDL on the table queues behind it) and must wait for
 *    every transaction older than it. So it is not started while a transaction older than
 *    LONG_TRANSACTION_MS is open in the database; one that fails anyway (a lock stays busy) has its half-built
 *    copy dropped when that can be done without waiting, and the table's rebuilds back off for a few sweeps.
 *    Copies left by a rebuild that died (`<index>_ccnew`, `<index>_ccold`, invalid) are dropped at the start
 *    of every reclaim, again only when that would not wait for a long transaction.
 *
 * Only one instance compacts a schema at a time (`pg_try_advisory_lock`): a busy lock means another is at
 * it, so this one skips rather than waits. The maintenance connection runs with `statement_timeout` 0 (a
 * database-wide timeout would cancel a long VACUUM or rebuild half-way) and `lock_timeout` 2 s (LOCK_TIMEOUT_MS; the store's `reclaimLockTimeoutMs`). Tables this
 * role does not own are left alone (VACUUM by a non-owner only warns and skips); a step whose lock stays busy
 * gives up, and a VACUUM that had to leave most of the deleted rows (a snapshot older than the sweep is still
 * open somewhere in the database) does not count: those tables stay counted and are tried again after the
 * next sweep.
 */
import type pg from 'pg';
import type { DeletedRows } from '../sql/executor.js';
import { indexBloated, indexFigures } from './index-bloat.js';

export { freshIndexPages, INDEX_BLOAT_FACTOR, type IndexFigures, indexBloated } from './index-bloat.js';

/**
 * A table is vacuumed once the sweeps since its last reclaim deleted at least this share of the rows it had
 * (`pg_class.reltuples`, from its last VACUUM or ANALYZE; unknown counts as 0, so a table never vacuumed
 * qualifies). The same scale as autovacuum's default (0.2): a sweep of a few rows of a large table leaves
 * it to autovacuum, a sweep that emptied much of a table gives the space back at once.
 */
export const RECLAIM_MIN_SHARE = 0.2;

/**
 * How long a maintenance step waits for a lock before it gives up: VACUUM for its table lock (another
 * VACUUM or ANALYZE holds it), REINDEX CONCURRENTLY for the transactions older than its build (a long
 * transaction anywhere in the database). Giving up keeps the sweep from waiting on them; the table stays
 * counted and is tried after the next sweep.
 */
export const LOCK_TIMEOUT_MS = 2000;

/**
 * A transaction open for longer than this is a long one: a concurrent rebuild would have to wait for it (and
 * give up after LOCK_TIMEOUT_MS), so none starts while one is open; a truncation or a drop that needs the locks it
 * holds on a table is not tried on that table.
 */
export const LONG_TRANSACTION_MS = 1000;

/** Reclaims (one per sweep) a table's rebuilds skip after its first failed rebuild; doubled with each failure in a row. */
export const REBUILD_BACKOFF_FIRST = 4;
/** Most reclaims a table's rebuilds skip after failures in a row. */
export const REBUILD_BACKOFF_MAX = 64;

/** SQLSTATEs of a step the database refused for good (skipped, the table counts as reclaimed). */
const REFUSED = new Set([
  '42501', // insufficient_privilege: not the owner
  '0A000', // feature_not_supported
  '42704', // undefined_object: the index went away meanwhile
]);
/** lock_not_available: the lock timeout passed. */
const BUSY = '55P03';

type Outcome = 'done' | 'refused' | 'busy';

const quote = (name: string) => `"${name.replaceAll('"', '""')}"`;

/** Runs a maintenance statement; says whether the database refused it or a lock was busy. */
async function attempt(client: pg.PoolClient, sql: string): Promise<Outcome> {
  try {
    await client.query(sql);
    return 'done';
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    if (code === BUSY) return 'busy';
    if (typeof code === 'string' && REFUSED.has(code)) return 'refused';
    throw error;
  }
}

/**
 * What one store remembers between its reclaims: the tables whose index rebuilds failed lately, and how many
 * more reclaims skip rebuilding them. A rebuild that failed once (a long transaction came up meanwhile, a
 * lock stayed busy) would likely fail again at the next sweep, each time leaving a half-built copy to drop.
 */
export class ReclaimState {
  constructor(
    /** A transaction open longer than this (ms) keeps index rebuilds and truncations from starting. */
    readonly longTransactionMs: number = LONG_TRANSACTION_MS,
    /** How long (ms) a step waits for a lock before it gives up (see LOCK_TIMEOUT_MS). */
    readonly lockTimeoutMs: number = LOCK_TIMEOUT_MS,
  ) {}

  private readonly backoff = new Map<string, { skip: number; failures: number }>();

  /** Whether `table`'s indexes may be rebuilt in this reclaim (counts one skipped reclaim off when not). */
  mayRebuild(table: string): boolean {
    const entry = this.backoff.get(table);
    if (entry === undefined || entry.skip === 0) return true;
    entry.skip -= 1;
    return false;
  }

  /** A rebuild of `table` failed: skip its rebuilds for the next reclaims, twice as many as the time before. */
  failed(table: string): void {
    const failures = (this.backoff.get(table)?.failures ?? 0) + 1;
    const skip = Math.min(REBUILD_BACKOFF_MAX, REBUILD_BACKOFF_FIRST * 2 ** (failures - 1));
    this.backoff.set(table, { skip, failures });
  }

  /** Every bloated index of `table` was rebuilt. */
  succeeded(table: string): void {
    this.backoff.delete(table);
  }
}

/** The transactions open in the database for longer than LONG_TRANSACTION_MS, as far as they matter here. */
interface LongTransactions {
  /** At least one (not this connection's, not an autovacuum worker's): no concurrent rebuild starts. */
  readonly any: boolean;
  /** The tables of the schema one of them holds a lock on: no truncation, no drop of their indexes. */
  readonly lockedTables: ReadonlySet<string>;
}

/**
 * Looks at pg_stat_activity and pg_locks. A role without pg_read_all_stats does not see when other roles'
 * transactions started: those go unnoticed here, and the lock timeout and the back-off bound what they cost.
 */
async function longTransactions(
  client: pg.PoolClient,
  schema: string,
  longMs: number,
): Promise<LongTransactions> {
  const result = await client.query<{ table_name: string | null }>(
    `WITH long AS (
        SELECT pid FROM pg_stat_activity
        WHERE datname = current_database() AND pid <> pg_backend_pid()
          AND backend_type <> 'autovacuum worker'
          AND xact_start < clock_timestamp() - make_interval(secs => $2::float8 / 1000))
      SELECT NULL AS table_name WHERE EXISTS (SELECT 1 FROM long)
      UNION ALL
      SELECT DISTINCT t.relname FROM pg_locks l
        JOIN long ON long.pid = l.pid
        JOIN pg_class c ON c.oid = l.relation
        LEFT JOIN pg_index x ON x.indexrelid = c.oid
        JOIN pg_class t ON t.oid = COALESCE(x.indrelid, c.oid)
        JOIN pg_namespace n ON n.oid = t.relnamespace
        WHERE l.locktype = 'relation' AND l.granted
          AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
          AND n.nspname = $1 AND t.relkind = 'r'`,
    [schema, longMs],
  );
  const lockedTables = new Set<string>();
  for (const row of result.rows) if (row.table_name !== null) lockedTables.add(row.table_name);
  return { any: result.rows.length > 0, lockedTables };
}

/**
 * The tables of `deleted` that lost at least RECLAIM_MIN_SHARE of their rows: `ours` (this role owns them, is
 * a member of their owner's role, or is a superuser) and `others` (VACUUM by anyone else only warns and
 * skips, so they are never reclaimed here: autovacuum has them).
 */
async function tablesToVacuum(client: pg.PoolClient, schema: string, deleted: DeletedRows) {
  const result = await client.query<{ name: string; tuples: number; owned: boolean }>(
    `SELECT c.relname AS name, c.reltuples::float8 AS tuples,
        pg_has_role(current_user, c.relowner, 'USAGE') AS owned
      FROM pg_class c
      JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relkind = 'r' AND c.relname = ANY($2::text[])`,
    [schema, [...deleted.keys()]],
  );
  const due = result.rows.filter(
    (row) => (deleted.get(row.name) ?? 0) >= RECLAIM_MIN_SHARE * Math.max(0, Number(row.tuples)),
  );
  return {
    ours: due.filter((row) => row.owned).map((row) => row.name),
    others: due.filter((row) => !row.owned).map((row) => row.name),
  };
}

/**
 * Drops the copies a concurrent rebuild that died half-way leaves on the schema's tables (an invalid index
 * named `<index>_ccnew` or `<index>_ccold`, with digits when there were several, beside the index it copies):
 * still updated by every write, never used by a read. Only of `tables` when given. A drop waits for every
 * transaction holding a lock on the table, so none is tried on a table a long transaction has locked, and the
 * first drop that finds a lock busy ends the cleanup: it never holds a sweep for more than one LOCK_TIMEOUT_MS.
 * What is left goes at a later reclaim.
 */
async function dropLeftovers(
  client: pg.PoolClient,
  schema: string,
  longMs: number,
  tables?: readonly string[],
) {
  const result = await client.query<{ name: string; table_name: string }>(
    `SELECT c.relname AS name, t.relname AS table_name FROM pg_index x
      JOIN pg_class c ON c.oid = x.indexrelid
      JOIN pg_class t ON t.oid = x.indrelid
      JOIN pg_namespace n ON n.oid = t.relnamespace
      WHERE n.nspname = $1 AND t.relkind = 'r' AND NOT x.indisvalid
        AND ($2::text[] IS NULL OR t.relname = ANY($2::text[]))
        AND pg_has_role(current_user, t.relowner, 'USAGE')
        AND c.relname ~ '_cc(new|old)[0-9]*$'
        AND EXISTS (SELECT 1 FROM pg_index o JOIN pg_class oc ON oc.oid = o.indexrelid
          WHERE o.indrelid = x.indrelid AND o.indexrelid <> x.indexrelid
            AND starts_with(oc.relname, regexp_replace(c.relname, '_cc(new|old)[0-9]*$', '')))
      ORDER BY c.relname`,
    [schema, tables ?? null],
  );
  if (result.rows.length === 0) return;
  const { lockedTables } = await longTransactions(client, schema, longMs);
  for (const { name, table_name } of result.rows) {
    if (lockedTables.has(table_name)) continue;
    const outcome = await attempt(
      client,
      `DROP INDEX CONCURRENTLY IF EXISTS ${quote(schema)}.${quote(name)}`,
    );
    if (outcome === 'busy') return;
  }
}

/**
 * Rebuilds the bloated indexes of `tables` (ANALYZEd just before, for their key widths). Returns the tables
 * with an index left bloated: none is rebuilt while a long transaction is open in the database, nor on a
 * table whose rebuilds back off after a failure. After the first failed rebuild (a long transaction came up,
 * and would be in the way of the next index too) it stops, drops the half-built copy (when that does not
 * wait) and backs the table off; an error other than a busy lock is thrown after that.
 */
async function rebuildBloated(
  client: pg.PoolClient,
  schema: string,
  tables: readonly string[],
  state: ReclaimState,
) {
  const waiting = new Set<string>();
  let failed = false;
  const bloated = (await indexFigures(client, schema, tables)).filter((index) => indexBloated(index.figures));
  const allowed = new Map(tables.map((table) => [table, state.mayRebuild(table)]));
  const stop = bloated.length > 0 && (await longTransactions(client, schema, state.longTransactionMs)).any;
  for (const index of bloated) {
    if (stop || failed || allowed.get(index.table) !== true) {
      waiting.add(index.table);
      continue;
    }
    let outcome: Outcome;
    try {
      outcome = await attempt(client, `REINDEX INDEX CONCURRENTLY ${quote(schema)}.${quote(index.name)}`);
    } catch (error) {
      state.failed(index.table);
      // The copy left behind is dropped when that does not wait; an error of the drop hides none of this one.
      await dropLeftovers(client, schema, state.longTransactionMs, [index.table]).catch(() => undefined);
      throw error;
    }
    if (outcome === 'busy') {
      failed = true;
      waiting.add(index.table);
      state.failed(index.table);
      await dropLeftovers(client, schema, state.longTransactionMs, [index.table]);
    }
  }
  for (const table of tables) if (!waiting.has(table) && allowed.get(table) === true) state.succeeded(table);
  return waiting;
}

/**
 * The tables of `vacuumed` whose VACUUM had to leave at least half as many dead rows as the sweeps deleted
 * (`n_dead_tup` as the VACUUM reported it): rows deleted after the oldest snapshot still open in the
 * database (a long transaction anywhere in it) stay until that snapshot ends. A few dead rows are the
 * updates of live rows meanwhile (a busy sessions table always has some), not that.
 */
async function leftDead(
  client: pg.PoolClient,
  schema: string,
  vacuumed: readonly string[],
  deleted: DeletedRows,
) {
  const result = await client.query<{ name: string; dead: string }>(
    `SELECT relname AS name, n_dead_tup AS dead FROM pg_stat_user_tables
      WHERE schemaname = $1 AND relname = ANY($2::text[])`,
    [schema, vacuumed],
  );
  return new Set(
    result.rows
      .filter((row) => Number(row.dead) > 0 && Number(row.dead) >= (deleted.get(row.name) ?? 0) / 2)
      .map((row) => row.name),
  );
}

/**
 * Vacuums the tables of `deleted` that lost many rows and rebuilds their bloated indexes, on `client` (a
 * pooled connection outside any transaction: VACUUM and REINDEX CONCURRENTLY cannot run in one). Returns
 * the tables it is done with: those it reclaimed, and those this role does not own (left to autovacuum).
 * None of ours when another instance holds the schema's reclaim lock; never a table whose VACUUM found its
 * lock busy, had to skip its truncation or had to leave most of the deleted rows (an older snapshot still
 * sees them), nor one with an index left bloated (a long transaction open, a rebuild that failed or backs
 * off): those stay counted, so the next sweep tries them again. `state` is the store's, kept between calls.
 */
export async function reclaimPostgres(
  client: pg.PoolClient,
  schema: string,
  deleted: DeletedRows,
  state: ReclaimState = new ReclaimState(),
): Promise<string[]> {
  if (deleted.size === 0) return [];
  const { ours, others } = await tablesToVacuum(client, schema, deleted);
  if (ours.length === 0) return others;
  const lock = `agentstate:reclaim:${schema}`;
  const locked = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock(hashtext($1)) AS ok', [
    lock,
  ]);
  if (locked.rows[0]?.ok !== true) return others;
  try {
    await client.query(`SET lock_timeout = ${Math.floor(state.lockTimeoutMs)}`);
    await client.query('SET statement_timeout = 0');
    await dropLeftovers(client, schema, state.longTransactionMs);
    const { lockedTables } = await longTransactions(client, schema, state.longTransactionMs);
    const vacuumed: string[] = [];
    for (const table of ours) {
      // The truncation would wait 5 s for the long transaction's lock, then give up: the table stays counted.
      const truncate = !lockedTables.has(table);
      const options = truncate ? '' : '(TRUNCATE false) ';
      const outcome = await attempt(client, `VACUUM ${options}${quote(schema)}.${quote(table)}`);
      if (outcome !== 'busy' && truncate) vacuumed.push(table);
    }
    if (vacuumed.length === 0) return others;
    // Checked before ANALYZE, which reports the dead rows it sampled instead.
    const dead = await leftDead(client, schema, vacuumed, deleted);
    const clean = vacuumed.filter((table) => !dead.has(table));
    const analyzed: string[] = [];
    for (const table of clean) {
      if ((await attempt(client, `ANALYZE ${quote(schema)}.${quote(table)}`)) !== 'busy')
        analyzed.push(table);
    }
    const waiting = await rebuildBloated(client, schema, analyzed, state);
    return [...others, ...analyzed.filter((table) => !waiting.has(table))];
  } finally {
    await client.query('RESET lock_timeout');
    await client.query('RESET statement_timeout');
    await client.query('SELECT pg_advisory_unlock(hashtext($1))', [lock]);
  }
}
