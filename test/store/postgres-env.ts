/** The test database, and a fresh random schema per test file (dropped by the file's cleanup). */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll } from 'vitest';

export const POSTGRES_URL =
  process.env.AGENTSTATE_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

export function randomSchema(): string {
  return `t_${randomUUID().replaceAll('-', '').slice(0, 20)}`;
}

/** A maker of fresh schemas for the calling test file, every one dropped when the file's tests are done. */
export function freshSchemas(): () => string {
  const made: string[] = [];
  afterAll(async () => {
    for (const schema of made) await dropSchema(schema);
  });
  return () => {
    const schema = randomSchema();
    made.push(schema);
    return schema;
  };
}

export function schemaUrl(schema: string, base: string = POSTGRES_URL): string {
  const url = new URL(base);
  url.searchParams.set('schema', schema);
  return url.toString();
}

/** Runs one statement on a connection of its own (for setup, inspection and cleanup). */
export async function adminQuery(
  text: string,
  values: unknown[] = [],
  url: string = POSTGRES_URL,
): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await client.query(text, values);
  } finally {
    await client.end();
  }
}

export async function dropSchema(schema: string): Promise<void> {
  await adminQuery(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
}

/**
 * A database of its own (for tests that look at every transaction of the database, or change its settings),
 * with its URL; `drop` ends its connections and drops it.
 */
export async function createDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `as_${randomUUID().replaceAll('-', '').slice(0, 20)}`;
  await adminQuery(`CREATE DATABASE "${name}"`);
  const url = new URL(POSTGRES_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      await adminQuery(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    },
  };
}

/** A caller's pool whose clients count the statements they run (BEGIN and COMMIT included). */
export function countingPool(max = 2): { pool: pg.Pool; counter: { statements: number } } {
  const pool = new pg.Pool({ connectionString: POSTGRES_URL, max });
  const counter = { statements: 0 };
  const wrapped = new WeakSet<pg.PoolClient>();
  pool.on('acquire', (client) => {
    if (wrapped.has(client)) return;
    wrapped.add(client);
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
      counter.statements++;
      return query(...args);
    };
  });
  return { pool, counter };
}
