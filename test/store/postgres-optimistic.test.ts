/**
 * PostgreSQL's optimistic writes (src/store/postgres/optimistic.ts): the reads of a write, then its writes
 * as one guarded statement. The guards decide nothing but whether the attempt stands: a contended write
 * runs again in a transaction and answers as ever. Counted here: statements per turn, and the outcomes
 * of writes racing for one row.
 */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { isAgentStateError } from '../../src/core/errors.js';
import { runTurn } from '../../src/runtime/turn.js';
import { openPostgresStore } from '../../src/store/postgres/index.js';
import { keptStatement, splitWith } from '../../src/store/postgres/optimistic.js';
import type { SqlCoreStore } from '../../src/store/sql/core-store.js';
import { ledgerTools } from '../runtime/ledger-tools.js';
import { freshScope, runtimeOptions, tempDir } from '../runtime/setup.js';
import { countingPool, dropSchema, randomSchema } from './postgres-env.js';

const schemas: string[] = [];
const temp = tempDir();
afterAll(async () => {
  for (const schema of schemas) await dropSchema(schema);
  temp.cleanup();
});

async function open() {
  const schema = randomSchema();
  schemas.push(schema);
  const { pool, counter } = countingPool(4);
  const store = (await openPostgresStore({ pool, schema })) as SqlCoreStore;
  // Every connection of the pool opened, so racing writes start together.
  const held = await Promise.all([1, 2, 3, 4].map(() => pool.connect()));
  for (const client of held) client.release();
  const close = async () => {
    await store.close();
    await pool.end();
  };
  return { store, counter, close };
}

describe('kept statements', () => {
  it('reads a WITH statement into its clauses and final statement', () => {
    const split = splitWith(
      'WITH ok AS (SELECT 1 WHERE (a = ?)), blobs AS (INSERT INTO b SELECT 1) INSERT INTO c SELECT ?',
    );
    expect(split.clauses.map((c) => c.name)).toEqual(['ok', 'blobs']);
    expect(split.final).toBe('INSERT INTO c SELECT ?');
    expect(splitWith('UPDATE t SET a = ?')).toEqual({ clauses: [], final: 'UPDATE t SET a = ?' });
  });

  it('renames each entry clauses, guards every hold and write, keeps the parameters in order', () => {
    const { sql, params } = keptStatement([
      { kind: 'hold', sql: 'SELECT 1 FROM sessions WHERE id = ? FOR SHARE', params: ['s'] },
      {
        kind: 'write',
        sql: 'WITH ok AS (SELECT ?) INSERT INTO x SELECT ? WHERE EXISTS (SELECT 1 FROM ok)',
        params: [1, 2],
      },
      { kind: 'write', sql: 'UPDATE t SET a = ? WHERE id = ?', params: [3, 'id'] },
    ]);
    expect(sql).toBe(
      'WITH h0 AS (SELECT 1 FROM sessions WHERE id = ? FOR SHARE), ok_1 AS (SELECT ?), ' +
        'w1 AS (INSERT INTO x SELECT ? WHERE EXISTS (SELECT 1 FROM ok_1) RETURNING 1), ' +
        'w2 AS (UPDATE t SET a = ? WHERE id = ? RETURNING 1) ' +
        'SELECT 1 / (SELECT count(*) FROM h0) + 1 / (SELECT count(*) FROM w1) + 1 / (SELECT count(*) FROM w2) AS ok',
    );
    expect(params).toEqual(['s', 1, 2, 3, 'id']);
  });
});

describe('postgres optimistic writes', () => {
  it('a turn of the flight booking: slot filling in 2 statements, the confirmation in 3, none run twice', async () => {
    const { store, counter, close } = await open();
    const scope = freshScope();
    const session = await store.createSession(scope, { agent: 'flight_booking' });
    const options = runtimeOptions(store, scope, session.id, ledgerTools(join(temp.dir, 'turns.jsonl')));
    const statements: number[] = [];
    for (const input of [
      'Book a flight from Beijing to Shanghai next Wednesday',
      'economy',
      'Alice Smith',
      'yes',
    ]) {
      const before = counter.statements;
      // However long a loaded machine takes: no start checkpoint of its own, no read for a cancel.
      await runTurn({ ...options, checkpointDeferMs: 600_000, cancelCheckMs: 600_000, input });
      statements.push(counter.statements - before);
    }
    // the lease with the head 1, commit 1 (the run's first checkpoint is never written: the final commit is the run's
    // first write): each commit reads nothing the head read or an earlier commit wrote (sql/known-rows.ts),
    // and lists the open tasks from what the head listed; the confirmation adds the commit that begins the
    // booking's action, which carries the run's first checkpoint (the first turn may also pay a new pooled
    // connection's SET search_path)
    expect(statements.slice(1)).toEqual([2, 2, 3]);
    expect(statements[0]).toBeLessThanOrEqual(9);
    expect(store.optimisticMisses).toBe(0);
    expect((await store.listMessages(scope, session.id)).length).toBe(8);
    await close();
  });

  it('writes racing for one task: exactly one lands, the others answer version_conflict', async () => {
    const { store, close } = await open();
    const scope = freshScope();
    const session = await store.createSession(scope, {});
    const task = await store.createTask(scope, { session_id: session.id, type: 'race' });
    const outcomes = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        store
          .commitTurn(scope, {
            update_tasks: [
              { id: task.id, expected_version: task.version, patch: { status_line: `writer ${i}` } },
            ],
            messages: { session_id: session.id, items: [{ role: 'assistant', content: `writer ${i}` }] },
          })
          .then(
            () => 'landed',
            (e: unknown) => (isAgentStateError(e, 'version_conflict') ? 'conflict' : String(e)),
          ),
      ),
    );
    expect(outcomes.filter((o) => o === 'landed')).toHaveLength(1);
    expect(outcomes.filter((o) => o === 'conflict')).toHaveLength(7);
    const after = await store.getTask(scope, task.id);
    expect(after?.version).toBe(task.version + 1);
    expect(after?.status_line).toMatch(/^writer \d$/);
    expect(store.optimisticMisses).toBeGreaterThan(0);
    await close();
  });

  it('a session patched by racing turns: one lands, and appends that race keep every message once', async () => {
    const { store, close } = await open();
    const scope = freshScope();
    const session = await store.createSession(scope, {});
    const patched = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        store
          .commitTurn(scope, {
            session: { id: session.id, expected_version: session.version, patch: { context: { writer: i } } },
          })
          .then(
            () => 'landed',
            (e: unknown) => (isAgentStateError(e, 'version_conflict') ? 'conflict' : String(e)),
          ),
      ),
    );
    expect(patched.filter((o) => o === 'landed')).toHaveLength(1);
    expect(patched.filter((o) => o === 'conflict')).toHaveLength(7);
    expect((await store.getSession(scope, session.id))?.version).toBe(session.version + 1);
    // Appends at once: each reads the session, and most find it moved at their write.
    const appended = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        store.appendMessages(scope, session.id, [{ role: 'user', content: `m${i}` }]),
      ),
    );
    expect(appended.flat()).toHaveLength(10);
    const messages = await store.listMessages(scope, session.id);
    expect(messages.map((m) => m.seq)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(new Set(messages.map((m) => m.content)).size).toBe(10);
    await close();
  });
});
