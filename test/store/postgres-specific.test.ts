/** What only the PostgreSQL store does: schemas, migrations under a lock, a caller's pool, JSON text. */
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.js';
import { isAgentStateError } from '../../src/core/errors.js';
import { openStore } from '../../src/store/open.js';
import { openPostgresStore, parsePostgresUrl } from '../../src/store/postgres/index.js';
import { MIGRATIONS } from '../../src/store/sql/schema.js';
import type { StateStore } from '../../src/store/types.js';
import { checkpointStorageTests } from './checkpoint-storage.js';
import { adminQuery, dropSchema, POSTGRES_URL, randomSchema, schemaUrl } from './postgres-env.js';

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
  it('reads the schema from the URL and keeps the rest of the URL for the connection', () => {
    const parsed = parsePostgresUrl('postgresql://u@h:5433/db?schema=s1&application_name=x');
    expect(parsed.schema).toBe('s1');
    expect(parsed.connectionString).toBe('postgresql://u@h:5433/db?application_name=x');
    expect(() => parsePostgresUrl('mysql://x')).toThrow(/\[postgres\]/);
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
