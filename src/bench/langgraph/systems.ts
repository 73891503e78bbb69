/**
 * AgentStateSaver as a benchmark system: LangGraph's checkpointer API (put, getTuple, list) over an
 * agentstate store, driven exactly as the LangGraph savers are (the same `saverDriver`), so the
 * figures compare the same workload through the same interface.
 */
import { join } from 'node:path';
import pg from 'pg';
import { AgentStateSaver } from '../../adapters/langgraph/index.js';
import { openStore } from '../../store/open.js';
import type { StateStore } from '../../store/types.js';
import { sqliteBaseline, sqliteGrowth } from '../checkpoint/sqlite-size.js';
import type { OpenSystem, SystemContext, SystemSpec } from '../checkpoint/system.js';
import { saverDriver } from '../checkpoint/systems/langgraph.js';

function saverOver(
  store: StateStore,
  context: SystemContext,
  measure: OpenSystem['storedBytes'],
  close: () => Promise<void>,
) {
  const saver = new AgentStateSaver({ store, tenant_id: `bench-${context.tag}`, user_id: 'bench-user' });
  return saverDriver(saver, context.tag, async () => (await measure()) ?? { method: 'n/a', bytes: 0 }, close);
}

export const saverMemory: SystemSpec = {
  name: 'agentstate-saver-memory',
  family: 'agentstate',
  backend: 'memory',
  async open(context) {
    const store = await openStore('memory:');
    const system = saverOver(
      store,
      context,
      async () => null,
      () => store.close(),
    );
    return { ...system, storedBytes: async () => null }; // not measured: nothing comparable to count
  },
};

export const saverSqlite: SystemSpec = {
  name: 'agentstate-saver-sqlite',
  family: 'agentstate',
  backend: 'sqlite',
  async open(context) {
    const path = join(context.dir, 'agentstate-saver.db');
    const options = { sqliteSynchronous: context.synchronous };
    await (await openStore(`sqlite:${path}`, options)).close(); // the schema alone: the baseline
    const baseline = sqliteBaseline(path);
    const store = await openStore(`sqlite:${path}`, options);
    let closed = false;
    const close = async () => {
      if (closed) return;
      closed = true;
      await store.close();
    };
    return saverOver(
      store,
      context,
      async () => {
        await close();
        return sqliteGrowth(path, baseline);
      },
      close,
    );
  },
};

export const saverPostgres: SystemSpec = {
  name: 'agentstate-saver-postgres',
  family: 'agentstate',
  backend: 'postgres',
  concurrency: 1,
  optIn: true,
  async open(context) {
    const schema = `agentstate_bench_saver_${context.tag}`;
    const url = new URL(context.postgresUrl);
    url.searchParams.set('schema', schema);
    const store = await openStore(url.toString());
    const pool = new pg.Pool({ connectionString: context.postgresUrl, max: 1 });
    const bytes = async () => {
      const { rows } = await pool.query<{ bytes: string | null }>(
        `SELECT sum(pg_total_relation_size(c.oid))::text AS bytes
           FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
          WHERE n.nspname = $1 AND c.relkind = 'r'`,
        [schema],
      );
      return Number(rows[0]?.bytes ?? 0);
    };
    const baseline = await bytes();
    let closed = false;
    return saverOver(
      store,
      context,
      async () => ({
        method: 'pg_total_relation_size of its tables (heap, TOAST, indexes)',
        bytes: (await bytes()) - baseline,
      }),
      async () => {
        if (closed) return;
        closed = true;
        await store.close();
        await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
        await pool.end();
      },
    );
  },
};
