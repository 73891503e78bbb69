/** What only the PostgreSQL store does: schemas, migrations under a lock, a caller's pool, JSON text. */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.js';
import { isAgentStateError } from '../../src/core/errors.js';
import { openStore } from '../../src/store/open.js';
import {
  DEFAULT_POSTGRES_IDLE_TIMEOUT_MS,
  openPostgresStore,
  parsePostgresUrl,
} from '../../src/store/postgres/index.js';
import { MIGRATIONS } from '../../src/store/sql/schema.js';
import type { StateStore } from '../../src/store/types.js';
import { checkpointStorageTests } from './checkpoint-storage.js';
import { adminQuery, freshSchemas, POSTGRES_URL, schemaUrl } from './postgres-env.js';

const freshSchema = freshSchemas();
const scope = { tenant_id: 'tenant', user_id: 'user' };

async function migrationRows(schema: string) {
  const result = await adminQuery(
    `SELECT version, name, applied_at FROM "${schema}".agentstate_migrations ORDER BY version`,
  );
  return result.rows;
}

describe('postgres store', () => {
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
