/** What only the PostgreSQL store does: schemas, migrations under a lock, a caller's pool, JSON text. */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.js';
import { isAgentStateError } from '../../src/core/errors.js';
import { newId } from '../../src/core/ids.js';
import { runIdFor } from '../../src/core/run-id.js';
import { openStore } from '../../src/store/open.js';
import {
  DEFAULT_POSTGRES_IDLE_TIMEOUT_MS,
  openPostgresStore,
  parsePostgresUrl,
} from '../../src/store/postgres/index.js';
import { ACTION_COLUMNS, TASK_COLUMNS } from '../../src/store/sql/rows.js';
import { MIGRATIONS } from '../../src/store/sql/schema.js';
import { NEXT_RUN_ID_JOINS } from '../../src/store/sql/session-head.js';
import type { StateStore } from '../../src/store/types.js';
import { checkpointStorageTests } from './checkpoint-storage.js';
import {
  adminQuery,
  countingPool,
  dropSchema,
  POSTGRES_URL,
  randomSchema,
  schemaUrl,
} from './postgres-env.js';

const schemas: string[] = [];
const freshSchema = () => {
  const schema = randomSchema();
  schemas.push(schema);
  return schema;
};
const scope = { tenant_id: 'tenant', user_id: 'user' };

afterAll(async () => {
  for (const schema of schemas) await dropSchema(schema);
});

async function migrationRows(schema: string) {
  const result = await adminQuery(
    `SELECT version, name, applied_at FROM "${schema}".agentstate_migrations ORDER BY version`,
  );
  return result.rows;
}

describe('postgres store', () => {
  it("computes a session's next run id in SQL as runIdFor does (the head statement's next_run)", async () => {
    const cases: [string, number | null][] = [
      [newId('session'), null],
      [newId('session'), 0],
    ];
    for (let i = 0; i < 60; i++)
      cases.push([newId('session'), i < 30 ? i + 1 : Math.floor(Math.random() * 2 ** 40)]);
    const values = cases.flat();
    const rows = cases.map((_, i) => `($${2 * i + 1}::text, $${2 * i + 2}::bigint, ${i})`).join(', ');
    const result = await adminQuery(
      `SELECT r.id AS run_id FROM (VALUES ${rows}) AS v(id, seq, n)
        CROSS JOIN LATERAL (SELECT v.id) s(id) CROSS JOIN LATERAL (SELECT v.seq) m(seq) ${NEXT_RUN_ID_JOINS}
        ORDER BY v.n`,
      values,
    );
    expect(result.rows.map((row) => row.run_id)).toEqual(cases.map(([id, seq]) => runIdFor(id, seq ?? 0)));
  });

  it("reads one message row and the open tasks' rows for the session head, however long the history (custom and generic plans)", async () => {
    const schema = freshSchema();
    const pool = new pg.Pool({ connectionString: POSTGRES_URL, max: 1 });
    const heads: { text: string; values: unknown[] }[] = [];
    pool.on('acquire', (client) => {
      const query = client.query.bind(client) as (...args: unknown[]) => unknown;
      (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
        const config = args[0] as { text?: string; values?: unknown[] };
        if (typeof config?.text === 'string' && config.text.startsWith('SELECT s.id'))
          heads.push({ text: config.text, values: config.values ?? [] });
        return query(...args);
      };
    });
    const store = await openPostgresStore({ pool, schema });
    const session = await store.createSession(scope, {});
    for (let i = 0; i < 6; i++) {
      const batch = Array.from({ length: 50 }, (_, j) => ({
        role: 'user' as const,
        content: `m ${i * 50 + j}`,
      }));
      await store.appendMessages(scope, session.id, batch);
    }
    for (let i = 0; i < 40; i++)
      await store.createTask(scope, {
        session_id: session.id,
        type: 'demo',
        state: i % 2 ? 'DONE' : 'CANCELLED',
      });
    await store.createTask(scope, { session_id: session.id, type: 'demo', state: 'COLLECTING' });
    const head = await store.getSessionHead(scope, session.id, { open_tasks: 10, next_run: true });
    expect(head?.last_message?.seq).toBe(300);
    expect(head?.open_tasks?.map((task) => task.state)).toEqual(['COLLECTING']);
    const statement = heads.at(-1);
    expect(statement).toBeDefined();
    await store.close();
    await pool.end();
    interface PlanNode {
      'Relation Name'?: string;
      'Actual Rows': number;
      'Actual Loops': number;
      'Rows Removed by Filter'?: number;
      Plans?: PlanNode[];
    }
    const rowsOf = (table: string, node: PlanNode): number =>
      (node['Relation Name'] === table
        ? (node['Actual Rows'] + (node['Rows Removed by Filter'] ?? 0)) * node['Actual Loops']
        : 0) + (node.Plans ?? []).reduce((n, child) => n + rowsOf(table, child), 0);
    const client = new pg.Client({ connectionString: POSTGRES_URL });
    await client.connect();
    try {
      await client.query(`SET search_path TO "${schema}"`);
      // A prepared statement run with literals: EXPLAIN given parameters would plan with their values.
      await client.query(`PREPARE head AS ${statement?.text}`);
      const literals = (statement?.values ?? []).map((value) =>
        typeof value === 'number' ? String(value) : client.escapeLiteral(String(value)),
      );
      for (const mode of ['force_custom_plan', 'force_generic_plan']) {
        await client.query(`SET plan_cache_mode = ${mode}`);
        const explained = await client.query(
          `EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE head(${literals.join(', ')})`,
        );
        const plan = (explained.rows[0] as { 'QUERY PLAN': [{ Plan: PlanNode }] })['QUERY PLAN'][0].Plan;
        expect({ mode, messages: rowsOf('messages', plan), tasks: rowsOf('tasks', plan) }).toEqual({
          mode,
          messages: 1,
          tasks: 1,
        });
      }
    } finally {
      await client.end();
    }
  });

  it("finds a session, task or action by its id, not by its user's index, for a user with thousands among users with one (generic plans)", async () => {
    const schema = freshSchema();
    const store = await openPostgresStore({ url: schemaUrl(schema) });
    const heavy = { tenant_id: 'tenant', user_id: 'heavy' };
    const first = await store.createSession(heavy, {});
    await store.close();
    // Many light users with a session each, one user with 3,000: what a service's sessions look like.
    await adminQuery(
      `INSERT INTO "${schema}".sessions (id, tenant_id, user_id, agent, status, context, version, ttl_seconds,
        created_at, updated_at, last_activity_at, expires_at, message_count)
      SELECT 'sess_bulk' || n, 'tenant', CASE WHEN n <= 3000 THEN 'heavy' ELSE 'light' || n END, NULL, 'active',
        '{}', 1, 3600, s.created_at, s.updated_at, s.last_activity_at, s.expires_at, 0
      FROM generate_series(1, 9000) AS n CROSS JOIN "${schema}".sessions s WHERE s.id = $1`,
      [first.id],
    );
    const seed = await openPostgresStore({ url: schemaUrl(schema) });
    const seedTask = await seed.createTask(heavy, { type: 'demo' });
    await seed.beginAction(heavy, {
      task_id: seedTask.id,
      type: 'call',
      params: null,
      idempotency_key: 'seed',
    });
    await seed.close();
    const copies = (table: string, columns: string, prefix: string) => {
      const select = columns.split(', ').map((column) => {
        if (column === 'id') return `'${prefix}' || n`;
        if (column === 'user_id') return "CASE WHEN n <= 3000 THEN 'heavy' ELSE 'light' || n END";
        if (column === 'idempotency_key') return `'bulk' || n`;
        if (table === 'tasks' && column === 'state') return "'DONE'";
        return `r.${column}`;
      });
      return adminQuery(`INSERT INTO "${schema}".${table} (${columns}) SELECT ${select.join(', ')}
        FROM generate_series(1, 9000) AS n CROSS JOIN (SELECT * FROM "${schema}".${table} LIMIT 1) r`);
    };
    await copies('tasks', TASK_COLUMNS, 'task_bulk');
    await copies('actions', ACTION_COLUMNS, 'act_bulk');
    for (const table of ['sessions', 'tasks', 'actions']) await adminQuery(`ANALYZE "${schema}".${table}`);
    const pool = new pg.Pool({ connectionString: POSTGRES_URL, max: 1 });
    const seen: { text: string; values: unknown[] }[] = [];
    pool.on('acquire', (client) => {
      const query = client.query.bind(client) as (...args: unknown[]) => unknown;
      (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
        const config = args[0] as { text?: string; values?: unknown[] };
        if (typeof config?.text === 'string' && /\b(sessions|tasks|actions)\b/.test(config.text))
          seen.push({ text: config.text, values: config.values ?? [] });
        return query(...args);
      };
    });
    const again = await openPostgresStore({ pool, schema });
    seen.length = 0;
    expect((await again.getSession(heavy, first.id))?.id).toBe(first.id);
    expect((await again.getSessionHead(heavy, first.id, { open_tasks: 5, next_run: true }))?.session.id).toBe(
      first.id,
    );
    await again.appendMessages(heavy, first.id, [{ role: 'user', content: 'hello' }]);
    await again.updateSession(heavy, first.id, 1, { context: { a: 1 } });
    const task = await again.createTask(heavy, { type: 'demo', session_id: first.id });
    expect((await again.getTask(heavy, task.id))?.id).toBe(task.id);
    await again.updateTask(heavy, task.id, 1, { state: 'COLLECTING' });
    const { action } = await again.beginAction(heavy, {
      task_id: task.id,
      type: 'call',
      params: null,
      idempotency_key: 'k',
    });
    expect((await again.getAction(heavy, action.id))?.id).toBe(action.id);
    await again.recordAttempt(heavy, action.id);
    await again.commitTurn(heavy, {
      messages: { session_id: first.id, items: [{ role: 'assistant', content: 'hi' }] },
      update_tasks: [{ id: task.id, expected_version: 2, patch: { state: 'CONFIRMING' } }],
      complete_actions: [{ id: action.id, status: 'SUCCESS', result: 1 }],
    });
    expect((await again.lastMessages(heavy, first.id, 5)).map((m) => m.content)).toEqual(['hello', 'hi']);
    await again.close();
    await pool.end();
    interface PlanNode {
      'Relation Name'?: string;
      'Actual Rows': number;
      'Actual Loops': number;
      'Rows Removed by Filter'?: number;
      Plans?: PlanNode[];
    }
    const rowsOf = (node: PlanNode): number =>
      (['sessions', 'tasks', 'actions'].includes(node['Relation Name'] ?? '')
        ? (node['Actual Rows'] + (node['Rows Removed by Filter'] ?? 0)) * node['Actual Loops']
        : 0) + (node.Plans ?? []).reduce((n, child) => n + rowsOf(child), 0);
    const client = new pg.Client({ connectionString: POSTGRES_URL });
    await client.connect();
    const read: Record<string, number> = {};
    try {
      await client.query(`SET search_path TO "${schema}"`);
      await client.query('SET plan_cache_mode = force_generic_plan');
      await client.query('BEGIN');
      for (const [i, statement] of seen.entries()) {
        if (!/^\s*(SELECT|UPDATE|WITH|INSERT)/.test(statement.text)) continue;
        // An optimistic write's guards would fail on a row it already changed: here they only count.
        const text = statement.text.replaceAll('1 / (SELECT count(*) FROM', '0 * (SELECT count(*) FROM');
        await client.query(`PREPARE s${i} AS ${text}`);
        const literals = statement.values.map((value) =>
          value === null
            ? 'NULL'
            : typeof value === 'number'
              ? String(value)
              : client.escapeLiteral(String(value)),
        );
        await client.query('SAVEPOINT p');
        // Run again, a statement that created a row meets it: its plan is the one of a new row, not looked at.
        const explained = await client
          .query(`EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE s${i}(${literals.join(', ')})`)
          .catch((error: unknown) => {
            if ((error as { code?: unknown }).code === '23505') return null;
            throw error;
          });
        await client.query('ROLLBACK TO SAVEPOINT p');
        if (explained === null) continue;
        const plan = (explained.rows[0] as { 'QUERY PLAN': [{ Plan: PlanNode }] })['QUERY PLAN'][0].Plan;
        read[statement.text.replace(/\s+/g, ' ').slice(0, 80)] = rowsOf(plan);
      }
      await client.query('ROLLBACK');
    } finally {
      await client.end();
    }
    expect(Object.keys(read).length).toBeGreaterThan(5);
    // Each statement reads the few rows it is about (the head: the session and the user's 2 open tasks),
    // never the heavy user's thousands.
    expect(Object.entries(read).filter(([, rows]) => rows > 10)).toEqual([]);
  });

  it('reads the schema from the URL and keeps the rest of the URL for the connection', () => {
    const parsed = parsePostgresUrl('postgresql://u@h:5433/db?schema=s1&application_name=x');
    expect(parsed.schema).toBe('s1');
    expect(parsed.connectionString).toBe('postgresql://u@h:5433/db?application_name=x');
    expect(() => parsePostgresUrl('mysql://x')).toThrow(/\[postgres\]/);
    const sized = parsePostgresUrl('postgres://u@h/db?max=25&schema=s2');
    expect(sized).toEqual({ connectionString: 'postgres://u@h/db', schema: 's2', max: 25 });
    expect(parsePostgresUrl('postgres://u@h/db').max).toBeNull();
    for (const bad of ['0', '-3', '2.5', 'ten', ''])
      expect(() => parsePostgresUrl(`postgres://u@h/db?max=${bad}`)).toThrow(
        /\?max= must be a positive integer/,
      );
  });

  it('opens through openStore, creates its schema, and records every migration once', async () => {
    const schema = freshSchema();
    const store = await openStore(schemaUrl(schema));
    expect(store.adapter).toBe('postgres');
    await store.createSession(scope, {});
    await store.close();
    const rows = await migrationRows(schema);
    expect(rows.map((row) => row.version)).toEqual(MIGRATIONS.map((m) => m.version));
    const again = await openPostgresStore({ url: schemaUrl(schema) });
    expect((await again.listSessions(scope)).items).toHaveLength(1);
    await again.close();
    expect(await migrationRows(schema)).toEqual(rows);
  });

  it('keeps its idle connections for idleTimeoutMs (default 5 minutes), closes them after', async () => {
    expect(DEFAULT_POSTGRES_IDLE_TIMEOUT_MS).toBe(300_000);
    const schema = freshSchema();
    const connections = async (name: string) =>
      Number(
        (await adminQuery(`SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = '${name}'`))
          .rows[0]?.n,
      );
    const open = async (name: string, idleTimeoutMs?: number) => {
      const url = new URL(schemaUrl(schema));
      url.searchParams.set('application_name', name);
      const store = await openPostgresStore({
        url: url.toString(),
        ...(idleTimeoutMs === undefined ? {} : { idleTimeoutMs }),
      });
      // Four calls at once: four connections of the pool in use, then idle.
      await Promise.all([1, 2, 3, 4].map(() => store.listSessions(scope)));
      return store;
    };
    const kept = await open(`as_keep_${schema}`);
    const closed = await open(`as_close_${schema}`, 200);
    try {
      expect(await connections(`as_keep_${schema}`)).toBeGreaterThanOrEqual(4);
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      expect(await connections(`as_keep_${schema}`)).toBeGreaterThanOrEqual(4);
      expect(await connections(`as_close_${schema}`)).toBe(0);
    } finally {
      await kept.close();
      await closed.close();
    }
    await expect(openPostgresStore({ url: schemaUrl(schema), idleTimeoutMs: -1 })).rejects.toThrow(
      /idleTimeoutMs must be an integer >= 0/,
    );
  });

  it('refuses reclaim timeouts that are not positive integers, naming the option', async () => {
    const schema = freshSchema();
    for (const [option, value] of [
      ['reclaimLockTimeoutMs', 0],
      ['reclaimLockTimeoutMs', 1.5],
      ['reclaimLongTransactionMs', -1],
    ] as const) {
      await expect(openPostgresStore({ url: schemaUrl(schema), [option]: value })).rejects.toThrow(
        new RegExp(`${option} must be`),
      );
    }
  });

  it('opens every connection of its pool at start with warmPool (what serve does), one without', async () => {
    const schema = freshSchema();
    const named = (name: string) => {
      const url = new URL(schemaUrl(schema));
      url.searchParams.set('application_name', name);
      return url.toString();
    };
    const connections = async (name: string) =>
      Number(
        (await adminQuery(`SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = '${name}'`))
          .rows[0]?.n,
      );
    const warm = await openPostgresStore({ url: `${named(`as_warm_${schema}`)}&max=4`, warmPool: true });
    const cold = await openStore(named(`as_cold_${schema}`));
    const viaOpen = await openStore(named(`as_open_${schema}`), { postgresWarmPool: true });
    try {
      expect(await connections(`as_warm_${schema}`)).toBe(4);
      expect(await connections(`as_cold_${schema}`)).toBe(1);
      expect(await connections(`as_open_${schema}`)).toBe(10);
    } finally {
      await warm.close();
      await cold.close();
      await viaOpen.close();
    }
  });

  // A server on the same machine is cheaper to reach over its Unix socket than over TCP (README, Stores).
  const socketDir = process.env.AGENTSTATE_TEST_POSTGRES_SOCKET_DIR ?? '/var/run/postgresql';
  const socketPort = new URL(POSTGRES_URL).port || '5432';
  it.skipIf(!existsSync(join(socketDir, `.s.PGSQL.${socketPort}`)))(
    'connects over the Unix socket a URL names with ?host=',
    async () => {
      const schema = freshSchema();
      const url = new URL(schemaUrl(schema));
      url.hostname = 'localhost';
      url.searchParams.set('host', socketDir);
      const store = await openStore(url.toString());
      const session = await store.createSession(scope, {});
      expect((await store.getSession(scope, session.id))?.id).toBe(session.id);
      await store.close();
      const plain = new URL(url);
      plain.searchParams.delete('schema');
      // No server address: the connection is not TCP.
      const { rows } = await adminQuery('SELECT inet_server_addr() AS addr', [], plain.toString());
      expect(rows[0]).toEqual({ addr: null });
      expect(await migrationRows(schema)).toHaveLength(MIGRATIONS.length);
    },
  );

  it('five stores opening one new schema at once migrate it once', async () => {
    const schema = freshSchema();
    const stores = await Promise.all(
      [1, 2, 3, 4, 5].map(() => openPostgresStore({ url: schemaUrl(schema), max: 2 })),
    );
    await Promise.all(stores.map((store) => store.close()));
    expect(await migrationRows(schema)).toHaveLength(MIGRATIONS.length);
  });

  it('schemas keep deployments apart in one database', async () => {
    const a = await openPostgresStore({ url: schemaUrl(freshSchema()) });
    const b = await openPostgresStore({ url: POSTGRES_URL, schema: freshSchema() });
    const session = await a.createSession(scope, {});
    expect(await b.getSession(scope, session.id)).toBeNull();
    expect(await a.getSession(scope, session.id)).not.toBeNull();
    await a.close();
    await b.close();
  });

  it("works on a caller's pool and leaves it open after close", async () => {
    const pool = new pg.Pool({ connectionString: POSTGRES_URL, max: 3 });
    const store = await openPostgresStore({ pool, schema: freshSchema() });
    const session = await store.createSession(scope, { context: { a: 1 } });
    expect((await store.getSession(scope, session.id))?.context).toEqual({ a: 1 });
    await store.close();
    await store.close();
    expect((await pool.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    await pool.end();
  });

  it("two stores of two schemas on one caller's connection each stay in their own schema", async () => {
    const pool = new pg.Pool({ connectionString: POSTGRES_URL, max: 1 });
    const a = await openPostgresStore({ pool, schema: freshSchema() });
    const b = await openPostgresStore({ pool, schema: freshSchema() });
    const inA = await a.createSession(scope, {});
    const inB = await b.createSession(scope, {});
    for (let i = 0; i < 3; i++) {
      expect(await a.getSession(scope, inB.id)).toBeNull();
      expect(await b.getSession(scope, inA.id)).toBeNull();
      expect((await a.getSession(scope, inA.id))?.id).toBe(inA.id);
      expect((await b.listSessions(scope)).items.map((s) => s.id)).toEqual([inB.id]);
    }
    await a.close();
    await b.close();
    await pool.end();
  });

  it('three sweepers at once remove every expired session once, with its messages', async () => {
    const schema = freshSchema();
    const clock = new ManualClock();
    const stores = await Promise.all(
      [1, 2, 3].map(() => openPostgresStore({ url: schemaUrl(schema), clock })),
    );
    const [first] = stores as [StateStore];
    const ids: string[] = [];
    for (let i = 0; i < 40; i++) {
      const session = await first.createSession(scope, { ttl_seconds: i < 30 ? 60 : 3600 });
      await first.appendMessages(scope, session.id, [{ role: 'user', content: `m${i}` }]);
      ids.push(session.id);
    }
    clock.advance(61_000);
    const removed = await Promise.all(stores.map((store) => store.sweepExpired(1000)));
    expect(removed.reduce((a, b) => a + b, 0)).toBe(30);
    const left = await adminQuery(`SELECT count(*)::int AS n FROM "${schema}".sessions`);
    expect(left.rows[0].n).toBe(10);
    const messages = await adminQuery(`SELECT count(*)::int AS n FROM "${schema}".messages`);
    expect(messages.rows[0].n).toBe(10);
    expect(await stores[0]?.sweepExpired(1000)).toBe(0);
    await Promise.all(stores.map((store) => store.close()));
  });

  it('round-trips the NUL character and other text jsonb would change', async () => {
    const store = await openPostgresStore({ url: schemaUrl(freshSchema()) });
    const value = {
      'k\u0000ey': 'a\u0000b',
      nul: '\u0000',
      emoji: '\u{1F600}',
      big: 1e308,
      tiny: 5e-324,
      dup: [1.5, 0.1],
    };
    const session = await store.createSession(scope, { context: value });
    expect((await store.getSession(scope, session.id))?.context).toEqual(value);
    await store.putMemory(scope, { namespace: 'n\u0000s', key: 'k\u0000', value: 'v\u0000' });
    expect((await store.getMemory(scope, 'n\u0000s', 'k\u0000'))?.value).toBe('v\u0000');
    for (const key of ['\u0001', '\u0001\u0001', '\u0000\u0001x', '\u0001\u0002']) {
      await store.putMemory(scope, { namespace: 'n\u0000s', key, value: key });
    }
    const listed = await store.listMemory(scope, 'n\u0000s', { prefix: '\u0001' });
    expect(listed.items.map((item) => item.key)).toEqual(['\u0001', '\u0001\u0001', '\u0001\u0002']);
    expect(listed.items.map((item) => item.value)).toEqual(['\u0001', '\u0001\u0001', '\u0001\u0002']);
    const all = await store.listMemory(scope, 'n\u0000s', { limit: 2 });
    const rest = await store.listMemory(scope, 'n\u0000s', { limit: 10, cursor: all.next_cursor });
    expect([...all.items, ...rest.items].map((item) => item.key)).toEqual([
      '\u0000\u0001x',
      '\u0001',
      '\u0001\u0001',
      '\u0001\u0002',
      'k\u0000',
    ]);
    const [message] = await store.appendMessages(scope, session.id, [{ role: 'user', content: 'x\u0000y' }]);
    expect(message?.content).toBe('x\u0000y');
    expect((await store.listMessages(scope, session.id))[0]?.content).toBe('x\u0000y');
    await store.close();
  });

  it('refuses bad options and an unreachable server is store_unavailable', async () => {
    await expect(openPostgresStore({ url: POSTGRES_URL, schema: 'x; DROP' })).rejects.toThrow(
      /\[postgres\] schema/,
    );
    await expect(openPostgresStore({})).rejects.toThrow(/\[postgres\] give exactly one of url and pool/);
    const failure = await openPostgresStore({ url: 'postgres://postgres@127.0.0.1:1/test' }).catch((e) => e);
    expect(isAgentStateError(failure, 'store_unavailable')).toBe(true);
  });
});

describe('postgres checkpoint storage', () => {
  const schema = freshSchema();
  checkpointStorageTests(
    () => openPostgresStore({ url: schemaUrl(schema) }),
    async (tenant_id, run_id) => {
      const result = await adminQuery(
        `SELECT count(*)::int AS rows, coalesce(sum(length(data)), 0)::int AS bytes FROM "${schema}".checkpoint_blobs
          WHERE tenant_id = $1 AND run_id = $2`,
        [tenant_id, run_id],
      );
      return result.rows[0] as { rows: number; bytes: number };
    },
  );
});

describe('postgres checkpoint puts after the last one this store wrote', () => {
  const history = (step: number) => ({
    messages: Array.from({ length: step + 1 }, (_, i) => ({ role: 'user', content: `message ${i}` })),
    step,
  });

  it('a new action reads its key and its task, then writes them in one statement; a known key reads only', async () => {
    const schema = freshSchema();
    const { pool, counter } = countingPool();
    const store = await openPostgresStore({ pool, schema });
    const session = await store.createSession(scope, {});
    const task = await store.createTask(scope, { session_id: session.id, type: 'demo' });
    const statements = async (work: () => Promise<unknown>) => {
      const before = counter.statements;
      const outcome = await work().catch((e: unknown) => e);
      return { outcome, statements: counter.statements - before };
    };
    const input = { task_id: task.id, type: 'call', params: { a: 1 }, idempotency_key: 'k1' };
    const first = await statements(() => store.beginAction(scope, input));
    // the key, the task, then the kept write (no BEGIN, no COMMIT: postgres/optimistic.ts)
    expect(first.statements).toBe(3);
    expect(first.outcome).toMatchObject({ created: true, action: { status: 'PENDING' } });
    const again = await statements(() => store.beginAction(scope, input));
    expect(again.outcome).toMatchObject({ created: false });
    expect(again.statements).toBe(1);
    const missing = await statements(() =>
      store.beginAction(scope, {
        ...input,
        task_id: newId('task'),
        idempotency_key: 'k2',
      }),
    );
    expect(isAgentStateError(missing.outcome, 'not_found')).toBe(true);
    const id = (first.outcome as { action: { id: string } }).action.id;
    const taken = await statements(() => store.beginAction(scope, { ...input, id, idempotency_key: 'k3' }));
    expect(isAgentStateError(taken.outcome, 'conflict')).toBe(true);
    expect((await store.listActions(scope)).items.map((a) => a.idempotency_key)).toEqual(['k1']);
    await store.close();
    await pool.end();
  });

  it('take one statement, stay whole when another store wrote in between or the last one was removed', async () => {
    const schema = freshSchema();
    const { pool, counter } = countingPool();
    const a = await openPostgresStore({ pool, schema });
    const b = await openPostgresStore({ url: schemaUrl(schema) });
    const run_id = `run_${Date.now()}`;
    const put = async (step: number) => {
      const before = counter.statements;
      const checkpoint = await a.putCheckpoint(scope, { run_id, step, channels: history(step) });
      return { checkpoint, statements: counter.statements - before };
    };
    // the first put of a run (no parent) is stored whole: one statement, nothing read
    expect((await put(0)).statements).toBe(1);
    for (let step = 1; step <= 3; step++) expect((await put(step)).statements).toBe(1);
    // another store writes the next one: this store's next put is still encoded against a checkpoint
    // that exists, so it is whole
    await b.putCheckpoint(scope, { run_id, step: 4, channels: history(4) });
    expect((await put(5)).statements).toBe(1);
    // a store that wrote nothing in the run reads its last manifest for a put with a parent
    const other = await openPostgresStore({ pool, schema });
    const before = counter.statements;
    const parent = await b.latestCheckpoint(scope, run_id);
    await other.putCheckpoint(scope, {
      run_id,
      step: 6,
      parent_id: parent?.id ?? null,
      channels: history(6),
    });
    expect(counter.statements - before).toBe(2);
    await other.close();
    expect(await b.pruneCheckpoints(scope, run_id, 6)).toBe(1);
    const all = await b.listCheckpoints(scope, run_id, { limit: 10 });
    expect(all.items.map((c) => c.step)).toEqual([6, 5, 4, 3, 2, 1]);
    expect(await b.pruneCheckpoints(scope, run_id, 7)).toBe(0);
    for (const c of all.items) expect(c.channels).toEqual(history(c.step));
    // every checkpoint of the run removed: the next put finds its last one gone and writes whole
    expect(await b.pruneCheckpoints(scope, run_id, 0)).toBe(6);
    const after = await put(6);
    expect(after.statements).toBe(3);
    expect((await b.latestCheckpoint(scope, run_id))?.channels).toEqual(history(6));
    // nothing was left behind by the put that found nothing to build on
    expect(await b.pruneCheckpoints(scope, run_id, 0)).toBe(1);
    const left = await adminQuery(
      `SELECT count(*)::int AS n FROM "${schema}".checkpoint_blobs WHERE run_id = $1`,
      [run_id],
    );
    expect(left.rows[0]).toEqual({ n: 0 });
    // an id already taken is refused and writes nothing
    const seventh = await put(7);
    const taken = await a
      .putCheckpoint(scope, { id: seventh.checkpoint.id, run_id, step: 8, channels: history(8) })
      .catch((e) => e);
    expect(isAgentStateError(taken, 'conflict')).toBe(true);
    const steps = (await b.listCheckpoints(scope, run_id, { limit: 10 })).items.map((c) => c.step);
    expect(steps).toEqual([7]);
    await a.close();
    await b.close();
    await pool.end();
  });
});
