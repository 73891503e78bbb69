/**
 * One sweeper run removes every expired memory item, lease and request key (up to 100 000 of each), not
 * just as many as its first batch of sessions: a sweep that finds no expired session removes them too.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.js';
import { sweepOnce } from '../../src/lifecycle/sweeper.js';
import { openPostgresStore } from '../../src/store/postgres/index.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import type { StateStore } from '../../src/store/types.js';
import { dropSchema, POSTGRES_URL, randomSchema, schemaUrl } from '../store/postgres-env.js';

const dir = mkdtempSync(join(tmpdir(), 'agentstate-sweep-others-'));
const schemas: string[] = [];
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  for (const schema of schemas) await dropSchema(schema);
});

const scope = { tenant_id: 't_others', user_id: 'u_others' };
const KEYS = 3000;
const ITEMS = 700;
const LEASES = 600;

/** Expired request keys, memory items and leases (more of each than one batch of 500), no session at all. */
async function fillExpired(store: StateStore, clock: ManualClock): Promise<void> {
  for (let i = 0; i < KEYS; i += 100) {
    await Promise.all(
      Array.from({ length: 100 }, (_, j) => store.claimRequestKey(scope, `key_${i + j}`, 'hash', 60)),
    );
  }
  for (let i = 0; i < ITEMS; i++) {
    await store.putMemory(scope, { namespace: 'ns', key: `item_${i}`, value: { i }, ttl_seconds: 60 });
  }
  for (let i = 0; i < LEASES; i++) await store.acquireLease(scope, `lease_${i}`, 'owner', 60_000);
  clock.advance(61_000);
}

async function countRows(query: (sql: string) => Promise<number>) {
  return {
    request_keys: await query('SELECT count(*) AS n FROM request_keys'),
    memory: await query('SELECT count(*) AS n FROM memory'),
    leases: await query('SELECT count(*) AS n FROM leases'),
  };
}

const NONE = { request_keys: 0, memory: 0, leases: 0 };

describe('one sweep removes every expired memory item, lease and request key', () => {
  it('sqlite', async () => {
    const clock = new ManualClock();
    const file = join(dir, 'others.db');
    const store = await openSqliteStore(file, { clock });
    await fillExpired(store, clock);
    expect(await sweepOnce(store)).toBe(0);
    const { default: Database } = await import('better-sqlite3');
    const db = new Database(file, { readonly: true });
    try {
      const left = await countRows(async (sql) => Number((db.prepare(sql).get() as { n: number }).n));
      expect(left).toEqual(NONE);
    } finally {
      db.close();
    }
    await store.close();
  });

  it('postgres', async () => {
    const clock = new ManualClock();
    const schema = randomSchema();
    schemas.push(schema);
    const store = await openPostgresStore({ url: schemaUrl(schema), clock });
    await fillExpired(store, clock);
    expect(await sweepOnce(store)).toBe(0);
    const client = new pg.Client({ connectionString: POSTGRES_URL });
    await client.connect();
    try {
      await client.query(`SET search_path TO "${schema}"`);
      const left = await countRows(async (sql) => Number((await client.query(sql)).rows[0].n));
      expect(left).toEqual(NONE);
    } finally {
      await client.end();
    }
    await store.close();
  });
});
