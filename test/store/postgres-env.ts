/** The test database, and a fresh random schema per test file (dropped by the file's cleanup). */
import { randomUUID } from 'node:crypto';
import pg from 'pg';

export const POSTGRES_URL =
  process.env.AGENTSTATE_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

export function randomSchema(): string {
  return `t_${randomUUID().replaceAll('-', '').slice(0, 20)}`;
}

export function schemaUrl(schema: string): string {
  const url = new URL(POSTGRES_URL);
  url.searchParams.set('schema', schema);
  return url.toString();
}

/** Runs one statement on a connection of its own (for setup, inspection and cleanup). */
export async function adminQuery(text: string, values: unknown[] = []): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString: POSTGRES_URL });
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
