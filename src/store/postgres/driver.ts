/**
 * The PostgreSQL executor over a `pg` Pool: `?` placeholders become `$n`, each statement is a named
 * (prepared once per connection) query, transactions run on one checked-out client, and a client whose
 * connection failed is destroyed instead of going back to the pool. Every connection works in one schema.
 */
import { createHash } from 'node:crypto';
import type pg from 'pg';
import {
  OptimisticMiss,
  type SqlDialect,
  type SqlDriver,
  type SqlExecutor,
  type SqlParam,
  type SqlRow,
  type SweepPacing,
  statementsSent,
} from '../sql/executor.js';
import { OptimisticExecutor } from './optimistic.js';
import { ReclaimState, reclaimPostgres } from './reclaim.js';

export const POSTGRES_DIALECT: SqlDialect = {
  name: 'postgres',
  serialKey: 'BIGSERIAL PRIMARY KEY',
  claimRows: ' FOR UPDATE SKIP LOCKED',
  inIntegers: (column) => `${column} = ANY(ARRAY(SELECT json_array_elements_text(?::json)::bigint))`,
  rowId: 'ctid',
};

/**
 * A sweep transaction runs on its own pooled connection and locks only rows nobody else reads (expired
 * sessions, old records): it may take longer than on SQLite, yet stays short enough that its locks go soon.
 */
const SWEEP_PACING: SweepPacing = { first: 500, min: 50, max: 2000, targetMs: 250 };

/** Failures worth running the whole transaction again: serialization failure, deadlock. */
const RETRY_CODES = new Set(['40001', '40P01']);
const MAX_ATTEMPTS = 5;

interface Statement {
  /** Undefined for an unnamed statement (parsed on every call). */
  readonly name: string | undefined;
  readonly text: string;
}

/**
 * Statement texts prepared by name, at most: a connection keeps every named statement it prepared until it
 * closes, and some statements vary with their input (a turn's commit with its parts, a checkpoint with its
 * blobs), so past this many texts a new one is sent unnamed and prepared by nobody.
 */
export const MAX_NAMED_STATEMENTS = 1_000;

/** `?` -> `$n`, named per schema so stores of two schemas sharing a connection never share a statement. */
function translate(cache: Map<string, Statement>, schema: string, sql: string): Statement {
  const statement = cache.get(sql);
  if (statement !== undefined) return statement;
  let n = 0;
  const text = sql.replace(/\?/g, () => `$${++n}`);
  if (cache.size >= MAX_NAMED_STATEMENTS) return { name: undefined, text };
  const name = `as_${createHash('sha1').update(`${schema}\n${text}`).digest('hex').slice(0, 24)}`;
  const named = { name, text };
  cache.set(sql, named);
  return named;
}

/**
 * PostgreSQL text cannot hold U+0000. Strings sent are escaped (U+0000 -> U+0001 U+0001, U+0001 -> U+0001
 * U+0002) and read back unescaped: a mapping that keeps equality, prefixes and order, so every query means
 * what it says. JSON text never holds either character raw (JSON escapes control characters).
 */
const NUL = '\u0000';
const MARK = '\u0001';

function encodeParam(value: SqlParam): SqlParam {
  if (typeof value !== 'string' || !(value.includes(NUL) || value.includes(MARK))) return value;
  return value.replaceAll(MARK, `${MARK}\u0002`).replaceAll(NUL, `${MARK}${MARK}`);
}

function decodeText(value: string): string {
  let out = '';
  let from = 0;
  for (let at = value.indexOf(MARK); at !== -1; at = value.indexOf(MARK, from)) {
    out += value.slice(from, at) + (value[at + 1] === MARK ? NUL : MARK);
    from = at + 2;
  }
  return out + value.slice(from);
}

function decodeRow(row: SqlRow): SqlRow {
  for (const [column, value] of Object.entries(row)) {
    if (typeof value === 'string' && value.includes(MARK)) row[column] = decodeText(value);
  }
  return row;
}

function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** A statement error (an SQLSTATE outside classes 08 and 57P) leaves the connection usable; anything else not. */
export function connectionLost(error: unknown): boolean {
  const code = codeOf(error);
  return code === undefined || !/^[0-9A-Z]{5}$/.test(code) || /^(08|57P)/.test(code);
}

export interface PostgresDriverOptions {
  readonly pool: pg.Pool;
  /** The schema every statement works in (already validated as an identifier). */
  readonly schema: string;
  /** True when the pool's connections already start in the schema (our own pool, via `options`). */
  readonly searchPathSet: boolean;
  /** See PostgresStoreOptions.reclaimLongTransactionMs. */
  readonly reclaimLongTransactionMs?: number;
  /** See PostgresStoreOptions.reclaimLockTimeoutMs. */
  readonly reclaimLockTimeoutMs?: number;
}

/** Module-wide, so that stores of different schemas on one caller's pool each set the schema they need. */
const guarded = new WeakSet<pg.PoolClient>();
const schemaOf = new WeakMap<pg.PoolClient, string>();

export function postgresDriver({
  pool,
  schema,
  searchPathSet,
  reclaimLongTransactionMs,
  reclaimLockTimeoutMs,
}: PostgresDriverOptions): SqlDriver {
  const statements = new Map<string, Statement>();
  const quoted = `"${schema}"`;
  /** Which tables' index rebuilds back off after a failure, kept from one reclaim to the next. */
  const reclaimState = new ReclaimState(reclaimLongTransactionMs, reclaimLockTimeoutMs);

  const executor = (client: pg.PoolClient): SqlExecutor => {
    const query = async (sql: string, params: readonly SqlParam[] = []) => {
      const { name, text } = translate(statements, schema, sql);
      statementsSent.postgres++;
      return client.query({ name, text, values: params.map(encodeParam) });
    };
    return {
      all: async (sql, params) => ((await query(sql, params)).rows as SqlRow[]).map(decodeRow),
      get: async (sql, params) => {
        const row = (await query(sql, params)).rows[0] as SqlRow | undefined;
        return row === undefined ? undefined : decodeRow(row);
      },
      run: async (sql, params) => (await query(sql, params)).rowCount ?? 0,
    };
  };

  /** A client of the pool, set up for this store: errors of a dead connection never go unhandled, its schema. */
  const checkout = async (): Promise<pg.PoolClient> => {
    const client = await pool.connect();
    if (!guarded.has(client)) {
      client.on('error', () => undefined);
      guarded.add(client);
    }
    if (!searchPathSet && schemaOf.get(client) !== schema) {
      try {
        statementsSent.postgres++;
        await client.query(`SET search_path TO ${quoted}`);
        schemaOf.set(client, schema);
      } catch (error) {
        client.release(error instanceof Error ? error : true);
        throw error;
      }
    }
    return client;
  };

  /**
   * Runs `fn` in a transaction on one client. Runs it again on a serialization failure or deadlock, and
   * when the connection was found dead at BEGIN (a pooled connection killed while idle): in both cases
   * nothing of the attempt was kept.
   */
  const inTransaction = async <T>(begin: string, fn: (tx: SqlExecutor) => Promise<T>): Promise<T> => {
    for (let attempt = 1; ; attempt++) {
      const client = await checkout();
      let broken: Error | undefined;
      let begun = false;
      try {
        statementsSent.postgres++;
        await client.query(begin);
        begun = true;
        const result = await fn(executor(client));
        statementsSent.postgres++;
        await client.query('COMMIT');
        return result;
      } catch (error) {
        if (!begun && connectionLost(error)) {
          broken = error instanceof Error ? error : new Error(String(error));
          if (attempt < MAX_ATTEMPTS) continue;
          throw error;
        }
        try {
          statementsSent.postgres++;
          await client.query('ROLLBACK');
        } catch (rollbackError) {
          broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
        }
        const code = codeOf(error);
        if (broken === undefined && code !== undefined && RETRY_CODES.has(code) && attempt < MAX_ATTEMPTS) {
          continue;
        }
        throw error;
      } finally {
        client.release(broken);
      }
    }
  };

  const single = async <T>(work: (q: SqlExecutor) => Promise<T>): Promise<T> => {
    const client = await checkout();
    let broken: Error | undefined;
    try {
      return await work(executor(client));
    } catch (error) {
      if (connectionLost(error)) broken = error instanceof Error ? error : new Error(String(error));
      throw error;
    } finally {
      client.release(broken);
    }
  };

  /**
   * The work's reads and its one kept statement on one connection, outside a transaction. Whatever fails
   * before that statement is sent wrote nothing: a miss. The statement failing on a guard or a taken key
   * wrote nothing either: a miss. A connection lost while it ran may have committed it: that is thrown.
   */
  const optimistic = async <T>(work: (q: OptimisticExecutor) => Promise<T>): Promise<T> => {
    const client = await checkout();
    let broken: Error | undefined;
    try {
      const kept = new OptimisticExecutor(executor(client));
      let result: T;
      try {
        result = await work(kept);
      } catch (error) {
        if (kept.failed !== undefined && connectionLost(kept.failed))
          broken = kept.failed instanceof Error ? kept.failed : new Error(String(kept.failed));
        throw error instanceof OptimisticMiss ? error : new OptimisticMiss(String(error));
      }
      try {
        await kept.flush();
      } catch (error) {
        if (!connectionLost(error)) throw new OptimisticMiss(`the kept statement failed (${codeOf(error)})`);
        broken = error instanceof Error ? error : new Error(String(error));
        throw error;
      }
      return result;
    } finally {
      client.release(broken);
    }
  };

  return {
    dialect: POSTGRES_DIALECT,
    optimistic,
    query: {
      all: (sql, params) => single((q) => q.all(sql, params)),
      get: (sql, params) => single((q) => q.get(sql, params)),
      run: (sql, params) => single((q) => q.run(sql, params)),
    },
    transaction: (fn) => inTransaction('BEGIN', fn),
    snapshot: (fn) => inTransaction('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY', fn),
    migrationTransaction: (fn) =>
      inTransaction('BEGIN', async (tx) => {
        await tx.run('SELECT pg_advisory_xact_lock(hashtext(?))', [`agentstate:migrate:${schema}`]);
        // Created only when absent, so a user without CREATE on the database can open a prepared schema.
        const exists = await tx.get('SELECT 1 AS one FROM pg_namespace WHERE nspname = ?', [schema]);
        if (exists === undefined) await tx.run(`CREATE SCHEMA ${quoted}`);
        return fn(tx);
      }),
    sweepPacing: SWEEP_PACING,
    reclaim: async (deleted) => {
      if (deleted.size === 0) return [];
      const client = await checkout();
      let broken: Error | undefined;
      try {
        return await reclaimPostgres(client, schema, deleted, reclaimState);
      } catch (error) {
        if (connectionLost(error)) broken = error instanceof Error ? error : new Error(String(error));
        throw error;
      } finally {
        client.release(broken);
      }
    },
    isUniqueViolation: (error) => codeOf(error) === '23505',
    ping: async () => (await single((q) => q.get('SELECT 1 AS one'))) !== undefined,
    close: async () => undefined,
  };
}
