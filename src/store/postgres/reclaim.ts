/**
 * Storage back after sweeps on PostgreSQL. A DELETE leaves dead tuples and index entries behind; the relation
 * files keep their size. After a sweep, for the tables that lost many rows:
 *
 * 1. `VACUUM`, then `ANALYZE`: dead tuples go, and the empty pages at the end of the heap are truncated (the
 *    truncation takes its lock only when it is free at once, and hands it back within ~20 ms when a
 *    statement waits for the table, so it never holds up a turn). Never VACUUM FULL, whose ACCESS EXCLUSIVE
 *    lock would stop every read and write of the table while it rewrites it.
 * 2. `REINDEX INDEX CONCURRENTLY` of each index that is bloated (see `indexBloated`): a btree never gives
 *    its empty pages back by itself. The concurrent rebuild lets reads and writes go on.
 *
 * Only one instance compacts a schema at a time (`pg_try_advisory_lock`): a busy lock means another is at
 * it, so this one skips rather than waits. Steps the database refuses (not the owner) are skipped; a step
 * whose lock stays busy (another VACUUM, a transaction older than a rebuild) gives up, and a VACUUM that
 * had to leave most of the deleted rows (a snapshot older than the sweep is still open somewhere in the
 * database) does not count: those tables stay counted and are tried again after the next sweep.
 */
import type pg from 'pg';
import type { DeletedRows } from '../sql/executor.js';

/**
 * A table is vacuumed once the sweeps since its last reclaim deleted at least this share of the rows it had
 * (`pg_class.reltuples`, from its last VACUUM or ANALYZE; unknown counts as 0, so a table never vacuumed
 * qualifies). The same scale as autovacuum's default (0.2): a sweep of a few rows of a large table leaves
 * it to autovacuum, a sweep that emptied much of a table gives the space back at once.
 */
export const RECLAIM_MIN_SHARE = 0.2;

/** An index is rebuilt when it has at least this many times the pages a fresh build would need. */
export const INDEX_BLOAT_FACTOR = 2;

/**
 * How long a maintenance step waits for a lock before it gives up: VACUUM for its table lock (another
 * VACUUM or ANALYZE holds it), REINDEX CONCURRENTLY for the transactions older than its build (a long
 * transaction anywhere in the database). Giving up keeps the sweep from waiting on them; the table stays
 * counted and is tried after the next sweep.
 */
const LOCK_TIMEOUT = '2s';

/** SQLSTATEs of a step the database refused for good (skipped, the table counts as reclaimed). */
const REFUSED = new Set([
  '42501', // insufficient_privilege: not the owner
  '0A000', // feature_not_supported
  '42704', // undefined_object: the index went away meanwhile
]);
/** lock_not_available: LOCK_TIMEOUT passed. */
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

/** The tables of `deleted` that lost at least RECLAIM_MIN_SHARE of their rows. */
async function tablesToVacuum(client: pg.PoolClient, schema: string, deleted: DeletedRows) {
  const result = await client.query<{ name: string; tuples: number }>(
    `SELECT c.relname AS name, c.reltuples::float8 AS tuples FROM pg_class c
      JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relkind = 'r' AND c.relname = ANY($2::text[])`,
    [schema, [...deleted.keys()]],
  );
  return result.rows
    .filter((row) => (deleted.get(row.name) ?? 0) >= RECLAIM_MIN_SHARE * Math.max(0, Number(row.tuples)))
    .map((row) => row.name);
}

export interface IndexFigures {
  /** Pages the index has now. */
  readonly pages: number;
  /** Live rows of its table (pg_class.reltuples after VACUUM). */
  readonly tuples: number;
  /** Average bytes of one entry's key (the columns' avg_width from pg_stats after ANALYZE), null when unknown. */
  readonly keyBytes: number | null;
  readonly blockSize: number;
}

/**
 * Pages a fresh btree build needs for `tuples` entries of `keyBytes`: the metapage, leaves filled to the
 * default fillfactor (90 %) with entries of an 8-byte header plus the key rounded up to 8 bytes plus a 4-byte
 * line pointer, and one internal page per 100 leaves (a root above more than one leaf). Averages and
 * deduplication make real builds smaller, so the estimate errs high, and a rebuild happens only when the
 * index is clearly bigger than that.
 */
export function freshIndexPages(tuples: number, keyBytes: number, blockSize: number): number {
  if (tuples <= 0) return 1;
  const entry = 8 + Math.ceil(keyBytes / 8) * 8 + 4;
  const perLeaf = Math.max(1, Math.floor(((blockSize - 40) * 0.9) / entry));
  const leaves = Math.ceil(tuples / perLeaf);
  return 1 + leaves + (leaves > 1 ? Math.ceil(leaves / 100) : 0);
}

/**
 * An index is rebuilt when it has at least INDEX_BLOAT_FACTOR times the pages a fresh build would need
 * (`freshIndexPages`), so at least half of it is empty pages. Only with known figures: a table with rows but
 * no statistics is left alone. An index of an emptied table (1 page when fresh) is rebuilt from 2 pages on.
 */
export function indexBloated(figures: IndexFigures): boolean {
  const { pages, tuples, keyBytes, blockSize } = figures;
  if (tuples > 0 && keyBytes === null) return false;
  const fresh = freshIndexPages(tuples, keyBytes ?? 0, blockSize);
  return pages > fresh && pages >= INDEX_BLOAT_FACTOR * fresh;
}

/** Valid plain btree indexes of `tables`, with the figures `indexBloated` needs. */
async function indexFigures(client: pg.PoolClient, schema: string, tables: readonly string[]) {
  const result = await client.query<{
    name: string;
    table_name: string;
    bytes: string;
    tuples: number;
    key_bytes: number | null;
    block_size: number;
  }>(
    `SELECT ic.relname AS name, t.relname AS table_name, pg_relation_size(ic.oid) AS bytes,
        t.reltuples::float8 AS tuples,
        current_setting('block_size')::int AS block_size,
        (SELECT CASE WHEN bool_and(COALESCE(s.avg_width, NULLIF(a.attlen, -1)) IS NOT NULL)
                  THEN SUM(COALESCE(s.avg_width, NULLIF(a.attlen, -1)))::float8 END
           FROM unnest(x.indkey::int2[]) AS k(attnum)
           JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum
           LEFT JOIN pg_stats s ON s.schemaname = n.nspname AND s.tablename = t.relname
             AND s.attname = a.attname AND NOT s.inherited) AS key_bytes
      FROM pg_index x
      JOIN pg_class ic ON ic.oid = x.indexrelid
      JOIN pg_class t ON t.oid = x.indrelid
      JOIN pg_namespace n ON n.oid = t.relnamespace
      JOIN pg_am am ON am.oid = ic.relam
      WHERE n.nspname = $1 AND t.relname = ANY($2::text[]) AND am.amname = 'btree'
        AND x.indisvalid AND x.indexprs IS NULL AND x.indpred IS NULL`,
    [schema, tables],
  );
  return result.rows.map((row) => ({
    name: row.name,
    table: row.table_name,
    figures: {
      pages: Math.ceil(Number(row.bytes) / row.block_size),
      tuples: Math.max(0, Number(row.tuples)),
      keyBytes: row.key_bytes === null ? null : Number(row.key_bytes),
      blockSize: row.block_size,
    },
  }));
}

/**
 * Drops what a concurrent rebuild that died half-way leaves (an invalid `<index>_ccnew` or `_ccold`): it
 * would slow every write and never be used.
 */
async function dropLeftovers(client: pg.PoolClient, schema: string): Promise<void> {
  const result = await client.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid
      JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND NOT x.indisvalid AND c.relname ~ '_cc(new|old)[0-9]*$'`,
    [schema],
  );
  for (const { name } of result.rows) {
    await attempt(client, `DROP INDEX CONCURRENTLY IF EXISTS ${quote(schema)}.${quote(name)}`);
  }
}

/**
 * Rebuilds the bloated indexes of `tables` (ANALYZEd just before, for their key widths). Returns the tables
 * with an index left bloated because a lock was busy; after the first busy lock (a long transaction is in
 * the way, and would be for the next index too) it stops and drops the half-built index.
 */
async function rebuildBloated(client: pg.PoolClient, schema: string, tables: readonly string[]) {
  const waiting = new Set<string>();
  for (const index of await indexFigures(client, schema, tables)) {
    if (!indexBloated(index.figures)) continue;
    if (waiting.size > 0) {
      waiting.add(index.table);
      continue;
    }
    const outcome = await attempt(client, `REINDEX INDEX CONCURRENTLY ${quote(schema)}.${quote(index.name)}`);
    if (outcome === 'busy') {
      waiting.add(index.table);
      await dropLeftovers(client, schema);
    }
  }
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
 * the tables it reclaimed. None when another instance holds the schema's reclaim lock; never a table whose
 * VACUUM found its lock busy or had to leave most of the deleted rows (an older snapshot still sees them),
 * nor one with an index whose rebuild found a lock busy: those stay counted, so the next sweep tries them
 * again.
 */
export async function reclaimPostgres(
  client: pg.PoolClient,
  schema: string,
  deleted: DeletedRows,
): Promise<string[]> {
  if (deleted.size === 0) return [];
  const tables = await tablesToVacuum(client, schema, deleted);
  if (tables.length === 0) return [];
  const lock = `agentstate:reclaim:${schema}`;
  const locked = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock(hashtext($1)) AS ok', [
    lock,
  ]);
  if (locked.rows[0]?.ok !== true) return [];
  try {
    await client.query(`SET lock_timeout = '${LOCK_TIMEOUT}'`);
    await dropLeftovers(client, schema);
    const vacuumed: string[] = [];
    for (const table of tables) {
      const outcome = await attempt(client, `VACUUM ${quote(schema)}.${quote(table)}`);
      if (outcome !== 'busy') vacuumed.push(table);
    }
    if (vacuumed.length === 0) return [];
    // Checked before ANALYZE, which reports the dead rows it sampled instead.
    const dead = await leftDead(client, schema, vacuumed, deleted);
    const clean = vacuumed.filter((table) => !dead.has(table));
    const analyzed: string[] = [];
    for (const table of clean) {
      if ((await attempt(client, `ANALYZE ${quote(schema)}.${quote(table)}`)) !== 'busy')
        analyzed.push(table);
    }
    const waiting = await rebuildBloated(client, schema, analyzed);
    return analyzed.filter((table) => !waiting.has(table));
  } finally {
    await client.query('RESET lock_timeout');
    await client.query('SELECT pg_advisory_unlock(hashtext($1))', [lock]);
  }
}
