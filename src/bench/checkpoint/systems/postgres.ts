/**
 * PostgreSQL systems (opt-in: they need a server). Each works in a schema of its own, dropped at close,
 * so the bench never touches other data and its stored bytes are the relations of that schema. The raw
 * baseline stores the state as JSON text (like raw-sqlite), with 1 connection or a pool of 8 driving 8 runs at once.
 */
import { PostgresSaver } from '@langchain/langgraph-checkpoint-postgres';
import pg from 'pg';
import { openPostgresStore } from '../../../store/postgres/index.js';
import type { ReadBack, StoredBytes, SystemSpec } from '../system.js';
import { readBack } from '../system.js';
import { agentstateDriver } from './agentstate.js';
import { saverDriver } from './langgraph.js';

async function schemaBytes(pool: pg.Pool, schema: string): Promise<StoredBytes> {
  const { rows } = await pool.query<{ bytes: string | null }>(
    `SELECT sum(pg_total_relation_size(c.oid))::text AS bytes
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relkind = 'r'`,
    [schema],
  );
  return {
    method: 'pg_total_relation_size of its tables (heap, TOAST, indexes)',
    bytes: Number(rows[0]?.bytes ?? 0),
  };
}

/** The schema of one system's run: distinctive, so nothing else on the server is ever touched. */
function schemaName(kind: string, connections: number, tag: string): string {
  return `agentstate_bench_${kind}${connections}_${tag}`;
}

export async function dropSchema(pool: pg.Pool, schema: string): Promise<void> {
  await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await pool.end();
}

function langgraphPostgres(connections: number): SystemSpec {
  return {
    name: connections === 1 ? 'langgraph-postgres' : `langgraph-postgres-${connections}`,
    family: 'langgraph',
    backend: 'postgres',
    concurrency: connections,
    optIn: true,
    async open(context) {
      const schema = schemaName('lg', connections, context.tag);
      const pool = new pg.Pool({ connectionString: context.postgresUrl, max: connections });
      await pool.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
      const saver = new PostgresSaver(pool, undefined, { schema });
      await saver.setup();
      const baseline = (await schemaBytes(pool, schema)).bytes;
      let closed = false;
      return saverDriver(
        saver,
        context.tag,
        async () => {
          const now = await schemaBytes(pool, schema);
          return { ...now, bytes: now.bytes - baseline };
        },
        async () => {
          if (closed) return;
          closed = true;
          await dropSchema(pool, schema);
        },
      );
    },
  };
}

export const langgraphPg1 = langgraphPostgres(1);
export const langgraphPg8 = langgraphPostgres(8);

function rawPostgres(connections: number): SystemSpec {
  return {
    name: `raw-pg-${connections}`,
    family: 'raw',
    backend: 'postgres',
    concurrency: connections,
    optIn: true,
    async open(context) {
      const schema = schemaName('raw', connections, context.tag);
      const pool = new pg.Pool({ connectionString: context.postgresUrl, max: connections });
      await pool.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
      await pool.query(
        `CREATE TABLE ${schema}.checkpoints (run_id text NOT NULL, step int NOT NULL, data text NOT NULL, PRIMARY KEY (run_id, step))`,
      );
      const baseline = (await schemaBytes(pool, schema)).bytes;
      const run = (index: number) => `run-${index}`;
      const decode = (row: { step: number; data: string } | undefined): ReadBack => {
        if (row === undefined) throw new Error(`raw-pg-${connections}: no checkpoint found`);
        return readBack(row.step, (JSON.parse(row.data) as { messages?: unknown }).messages);
      };
      let closed = false;
      return {
        async put(index, step, state) {
          await pool.query(`INSERT INTO ${schema}.checkpoints (run_id, step, data) VALUES ($1, $2, $3)`, [
            run(index),
            step,
            JSON.stringify(state),
          ]);
        },
        async latest(index) {
          const { rows } = await pool.query(
            `SELECT step, data FROM ${schema}.checkpoints WHERE run_id = $1 ORDER BY step DESC LIMIT 1`,
            [run(index)],
          );
          return decode(rows[0]);
        },
        async history(index, limit) {
          const { rows } = await pool.query(
            `SELECT step, data FROM ${schema}.checkpoints WHERE run_id = $1 ORDER BY step DESC LIMIT $2`,
            [run(index), limit],
          );
          return rows.map(decode);
        },
        async storedBytes() {
          const now = await schemaBytes(pool, schema);
          return { ...now, bytes: now.bytes - baseline };
        },
        async close() {
          if (closed) return;
          closed = true;
          await dropSchema(pool, schema);
        },
      };
    },
  };
}

export const rawPg1 = rawPostgres(1);
export const rawPg8 = rawPostgres(8);

/** agentstate's PostgreSQL store with a pool of `connections`, in a schema of its own, dropped at close. */
function agentstatePostgres(connections: number): SystemSpec {
  return {
    name: connections === 1 ? 'agentstate-postgres' : `agentstate-postgres-${connections}`,
    family: 'agentstate',
    backend: 'postgres',
    concurrency: connections,
    optIn: true,
    async open(context) {
      const schema = schemaName('as', connections, context.tag);
      const store = await openPostgresStore({ url: context.postgresUrl, schema, max: connections });
      const pool = new pg.Pool({ connectionString: context.postgresUrl, max: 1 });
      const baseline = (await schemaBytes(pool, schema)).bytes;
      const system = agentstateDriver(store, context.tag, async () => {
        const now = await schemaBytes(pool, schema);
        return { ...now, bytes: now.bytes - baseline };
      });
      let closed = false;
      return {
        ...system,
        async close() {
          if (closed) return;
          closed = true;
          await system.close();
          await dropSchema(pool, schema);
        },
      };
    },
  };
}

export const agentstatePg1 = agentstatePostgres(1);
export const agentstatePg8 = agentstatePostgres(8);
