import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { isAgentStateError } from '../../src/core/errors.js';
import { newId } from '../../src/core/ids.js';
import { runIdFor } from '../../src/core/run-id.js';
import { openPostgresStore } from '../../src/store/postgres/index.js';
import { ACTIONS, TASKS } from '../../src/store/sql/rows.js';
import { NEXT_RUN_ID_JOINS } from '../../src/store/sql/session-head.js';
import { adminQuery, countingPool, freshSchemas, POSTGRES_URL, schemaUrl } from './postgres-env.js';

const freshSchema = freshSchemas();
const scope = { tenant_id: 'tenant', user_id: 'user' };

describe('postgres store reads', () => {
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
    await copies('tasks', TASKS.columns, 'task_bulk');
    await copies('actions', ACTIONS.columns, 'act_bulk');
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
});

describe('postgres checkpoint puts after the last one this store wrote', () => {
  const history = (step: number) => ({
    messages: Array.from({ length: step + 1 }, (_, i) => ({ role: 'user', content: `message ${i}` })),
    step,
  });

  it('a new action is one statement (its task known, its key taken to be free); a taken key runs again', async () => {
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
    // the kept write alone (no BEGIN, no COMMIT: postgres/optimistic.ts): the task as this store wrote it,
    // held unchanged, and the key taken to be free, which the insert checks (sql/known-rows.ts)
    expect(first.statements).toBe(1);
    expect(first.outcome).toMatchObject({ created: true, action: { status: 'PENDING' } });
    const again = await statements(() => store.beginAction(scope, input));
    expect(again.outcome).toMatchObject({ created: false });
    // the kept write fails on the taken key, then a transaction reads it: BEGIN, the key, COMMIT
    expect(again.statements).toBe(4);
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
