/**
 * When a PostgreSQL index is worth rebuilding after sweeps: its pages against what a fresh build of its
 * live entries would need, from the catalog's figures.
 */
import type pg from 'pg';

/** An index is rebuilt when it has at least this many times the pages a fresh build would need. */
export const INDEX_BLOAT_FACTOR = 2;

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
export async function indexFigures(client: pg.PoolClient, schema: string, tables: readonly string[]) {
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
