/**
 * Connections of the PostgreSQL store killed with pg_terminate_backend, between and during operations:
 * the call in flight fails with store_unavailable, no partial turn is visible, and the next call succeeds
 * on a new connection.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isAgentStateError } from '../../src/core/errors.js';
import { openPostgresStore } from '../../src/store/postgres/index.js';
import type { StateStore } from '../../src/store/types.js';
import { adminQuery, dropSchema, POSTGRES_URL, randomSchema, schemaUrl } from './postgres-env.js';

const schema = randomSchema();
const app = `agentstate_fault_${randomUUID().slice(0, 8)}`;
const url = new URL(schemaUrl(schema));
url.searchParams.set('application_name', app);
let store: StateStore;
const scope = () => ({ tenant_id: `t_${randomUUID()}`, user_id: 'u' });

beforeAll(async () => {
  store = await openPostgresStore({ url: url.toString(), max: 4 });
});
afterAll(async () => {
  await store.close();
  await dropSchema(schema);
});

async function storePids(): Promise<number[]> {
  const result = await adminQuery('SELECT pid FROM pg_stat_activity WHERE application_name = $1', [app]);
  return result.rows.map((row) => Number(row.pid));
}

async function terminate(pids: number[]): Promise<void> {
  await adminQuery('SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid', [pids]);
}

async function until(check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('postgres store under killed connections', () => {
  it('between operations: the next call works on new connections', async () => {
    const s = scope();
    const session = await store.createSession(s, {});
    const before = await storePids();
    expect(before.length).toBeGreaterThan(0);
    await terminate(before);
    await until(
      async () => (await storePids()).every((pid) => !before.includes(pid)),
      'the old backends to go',
    );
    await new Promise((resolve) => setTimeout(resolve, 50));
    const appended = await store.appendMessages(s, session.id, [{ role: 'user', content: 'after the kill' }]);
    expect(appended.map((m) => m.seq)).toEqual([1]);
    const now = await storePids();
    expect(now.length).toBeGreaterThan(0);
    expect(now.some((pid) => before.includes(pid))).toBe(false);
    expect(await store.ping()).toBe(true);
  });

  it('during a turn: store_unavailable, nothing of the turn visible, then the turn goes through', async () => {
    const s = scope();
    const session = await store.createSession(s, {});
    // Hold the session row so the turn blocks after it has written its task, then kill its connection.
    const blocker = new pg.Client({ connectionString: POSTGRES_URL });
    await blocker.connect();
    await blocker.query('BEGIN');
    await blocker.query(`SELECT 1 FROM "${schema}".sessions WHERE id = $1 FOR UPDATE`, [session.id]);
    const batch = {
      create_tasks: [{ type: 'booking', state: 'COLLECTING' as const }],
      messages: { session_id: session.id, items: [{ role: 'user' as const, content: 'book it' }] },
      checkpoint: { run_id: `run_${randomUUID()}`, step: 1, channels: { a: [1, 2] } },
    };
    const turn = store.commitTurn(s, batch).then(
      () => null,
      (error: unknown) => error,
    );
    const waiting = async () => {
      const result = await adminQuery(
        "SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'",
        [app],
      );
      return result.rows.length === 1;
    };
    await until(waiting, 'the turn to wait on the row lock');
    const blocked = await adminQuery(
      "SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'",
      [app],
    );
    await terminate(blocked.rows.map((row) => Number(row.pid)));
    const failure = await turn;
    await blocker.query('ROLLBACK');
    await blocker.end();
    expect(isAgentStateError(failure, 'store_unavailable'), String(failure)).toBe(true);
    expect((failure as Error).message).toMatch(/^\[postgres\] store unavailable/);
    expect((await store.listTasks(s)).items).toEqual([]);
    expect(await store.listMessages(s, session.id)).toEqual([]);
    expect(await store.latestCheckpoint(s, batch.checkpoint.run_id)).toBeNull();
    expect((await store.getSession(s, session.id))?.version).toBe(1);

    const done = await store.commitTurn(s, batch);
    expect(done.tasks).toHaveLength(1);
    expect(done.messages.map((m) => m.seq)).toEqual([1]);
    expect((await store.latestCheckpoint(s, batch.checkpoint.run_id))?.channels).toEqual({ a: [1, 2] });
  });

  it('reads racing with killed connections fail only with store_unavailable, then work again', async () => {
    const s = scope();
    const session = await store.createSession(s, {});
    const failures: unknown[] = [];
    for (let i = 0; i < 20; i++) {
      const reads = Array.from({ length: 4 }, () =>
        store.getSession(s, session.id).then(
          () => null,
          (error: unknown) => error,
        ),
      );
      await terminate(await storePids());
      for (const error of await Promise.all(reads)) if (error !== null) failures.push(error);
    }
    for (const error of failures)
      expect(isAgentStateError(error, 'store_unavailable'), String(error)).toBe(true);
    await until(
      async () => (await store.getSession(s, session.id).catch(() => null)) !== null,
      'reads to work',
    );
    expect((await store.getSession(s, session.id))?.id).toBe(session.id);
  });
});
