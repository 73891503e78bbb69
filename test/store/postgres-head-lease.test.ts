/**
 * PostgreSQL's turn start in one statement (getSessionHead with `lease`): the lease's insert and the head's
 * reads share one snapshot, so a lease freed by a commit the snapshot predates must not hand out the
 * state before that commit. Here the holder frees the lease and changes the session in one transaction
 * that commits while the statement waits for it: the head given must be the one after that commit.
 */
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { openPostgresStore } from '../../src/store/postgres/index.js';
import { statementsSent } from '../../src/store/sql/executor.js';
import { adminQuery, dropSchema, POSTGRES_URL, randomSchema } from './postgres-env.js';

const schemas: string[] = [];
afterAll(async () => {
  for (const schema of schemas) await dropSchema(schema);
});

const scope = { tenant_id: 'tenant', user_id: 'user' };

async function waitForLockWait(application: string): Promise<void> {
  for (let tries = 0; tries < 500; tries++) {
    const waiting = await adminQuery(
      `SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`,
      [application],
    );
    if (Number(waiting.rows[0]?.n) > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error('the head statement never waited for the lease row');
}

describe("PostgreSQL's head with its lease in one statement", () => {
  it('takes a free lease and reads the head in one statement', async () => {
    const schema = randomSchema();
    schemas.push(schema);
    const store = await openPostgresStore({ url: POSTGRES_URL, schema });
    try {
      const session = await store.createSession(scope, { context: { step: 1 } });
      const before = statementsSent.postgres;
      const lease = { name: `session:${session.id}`, owner: 'a', ttl_ms: 10_000 };
      const head = await store.getSessionHead(scope, session.id, { lease, open_tasks: 5, next_run: true });
      expect(statementsSent.postgres - before).toBe(1);
      expect(head?.lease?.owner).toBe('a');
      expect(head?.session).toEqual(session);
    } finally {
      await store.close();
    }
  });

  it('reads the head again when the lease it took was freed by a commit its snapshot did not see', async () => {
    const schema = randomSchema();
    schemas.push(schema);
    const application = `head-lease-${schema}`;
    const url = new URL(POSTGRES_URL);
    url.searchParams.set('application_name', application);
    const store = await openPostgresStore({ url: url.toString(), schema });
    const holder = new pg.Client({ connectionString: POSTGRES_URL });
    await holder.connect();
    try {
      const session = await store.createSession(scope, { context: { step: 1 } });
      const name = `session:${session.id}`;
      expect(await store.acquireLease(scope, name, 'holder', 60_000)).not.toBeNull();
      // The holder's last commit: the session changed and the lease freed, not committed yet.
      await holder.query(`SET search_path TO "${schema}"`);
      await holder.query('BEGIN');
      await holder.query(`UPDATE sessions SET context = '{"step":2}', version = version + 1 WHERE id = $1`, [
        session.id,
      ]);
      await holder.query('DELETE FROM leases WHERE name = $1', [name]);
      const asked = store.getSessionHead(scope, session.id, {
        lease: { name, owner: 'next', ttl_ms: 60_000 },
        next_run: true,
      });
      // The statement has its snapshot and waits on the lease row the holder is deleting.
      await waitForLockWait(application);
      await holder.query('COMMIT');
      const head = await asked;
      expect(head?.lease?.owner).toBe('next');
      expect(head?.session.context).toEqual({ step: 2 });
      expect(head?.session.version).toBe(session.version + 1);
    } finally {
      await holder.end();
      await store.close();
    }
  });
});
