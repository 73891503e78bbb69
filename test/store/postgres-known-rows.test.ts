/**
 * The rows a PostgreSQL store knows (src/store/sql/known-rows.ts): its optimistic writes take a row it last
 * read or wrote instead of reading it, held unchanged with their one statement. Here another store of the
 * same schema (another process) changes each kind of row in between: the hold fails, the write runs again
 * in a transaction and answers what the database holds, as a store that knew nothing answers.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { isAgentStateError } from '../../src/core/errors.js';
import { OPEN_TASK_STATES } from '../../src/core/model.js';
import { openPostgresStore } from '../../src/store/postgres/index.js';
import type { SqlCoreStore } from '../../src/store/sql/core-store.js';
import { freshScope } from '../runtime/setup.js';
import { freshSchemas, POSTGRES_URL } from './postgres-env.js';

const schemas = freshSchemas();
const opened: SqlCoreStore[] = [];
afterAll(async () => {
  for (const store of opened) await store.close();
});

/** Two stores of one schema: `a` knows the rows it wrote, `b` writes behind its back. */
async function twoStores(): Promise<{ a: SqlCoreStore; b: SqlCoreStore }> {
  const schema = schemas();
  const a = (await openPostgresStore({ url: POSTGRES_URL, schema })) as SqlCoreStore;
  const b = (await openPostgresStore({ url: POSTGRES_URL, schema })) as SqlCoreStore;
  opened.push(a, b);
  return { a, b };
}

describe('rows a postgres store knows, changed by another store', () => {
  it('a task: the write runs again against the version stored', async () => {
    const { a, b } = await twoStores();
    const scope = freshScope();
    const session = await a.createSession(scope, {});
    const task = await a.createTask(scope, { session_id: session.id, type: 'demo' });
    await b.updateTask(scope, task.id, 1, { slots: { from: 'b' } });
    // `a` knows version 1: its attempt misses, the transaction finds version 2 and applies the patch.
    const done = await a.commitTurn(scope, {
      update_tasks: [{ id: task.id, expected_version: 2, patch: { state: 'COLLECTING' } }],
      list_open_tasks: { session_id: session.id, limit: 10 },
    });
    expect(done.tasks[0]).toMatchObject({ version: 3, state: 'COLLECTING', slots: { from: 'b' } });
    expect(done.open_tasks?.map((t) => t.version)).toEqual([3]);
    expect(await b.getTask(scope, task.id)).toEqual(done.tasks[0]);
    // What the transaction wrote is what `a` knows next: no second miss.
    const misses = a.optimisticMisses;
    await a.updateTask(scope, task.id, 3, { slots: { from: 'a' } });
    expect(a.optimisticMisses).toBe(misses);
    // And a stale expectation is a conflict, as ever.
    await expect(a.updateTask(scope, task.id, 3, { state: 'CONFIRMING' })).rejects.toSatisfy((error) =>
      isAgentStateError(error, 'version_conflict'),
    );
    expect(a.optimisticMisses).toBeGreaterThanOrEqual(1);
  });

  it('a session: messages appended by another store keep their seqs', async () => {
    const { a, b } = await twoStores();
    const scope = freshScope();
    const session = await a.createSession(scope, {});
    await a.getSessionHead(scope, session.id, { open_tasks: 10, next_run: true });
    await a.appendMessages(scope, session.id, [{ role: 'user', content: 'a1' }]);
    await b.appendMessages(scope, session.id, [{ role: 'user', content: 'b1' }]);
    const patched = await b.updateSession(scope, session.id, 1, { context: { by: 'b' } });
    const done = await a.commitTurn(scope, {
      session: { id: session.id, expected_version: patched.version, patch: { status: 'waiting_for_user' } },
      messages: { session_id: session.id, items: [{ role: 'assistant', content: 'a2' }] },
    });
    expect(done.messages.map((m) => m.seq)).toEqual([3]);
    expect(done.session).toMatchObject({ context: { by: 'b' }, status: 'waiting_for_user' });
    expect(await b.getSession(scope, session.id)).toEqual(done.session);
    expect((await b.listMessages(scope, session.id)).map((m) => m.content)).toEqual(['a1', 'b1', 'a2']);
  });

  it('a session: one another store deleted takes no checkpoint', async () => {
    const { a, b } = await twoStores();
    const scope = freshScope();
    const session = await a.createSession(scope, {});
    await a.getSessionHead(scope, session.id, { open_tasks: 10, next_run: true });
    await b.deleteSession(scope, session.id);
    const put = a.putCheckpoint(scope, {
      run_id: 'run_1',
      session_id: session.id,
      step: 0,
      channels: { a: 1 },
    });
    await expect(put).rejects.toSatisfy((error) => isAgentStateError(error, 'not_found'));
    expect(await b.latestCheckpoint(scope, 'run_1')).toBeNull();
  });

  it('the open tasks a commit lists: one another store created is listed', async () => {
    const { a, b } = await twoStores();
    const scope = freshScope();
    const session = await a.createSession(scope, {});
    const mine = await a.createTask(scope, { session_id: session.id, type: 'demo' });
    // The head lists the user's open tasks: `a` knows the whole list.
    await a.getSessionHead(scope, session.id, { open_tasks: 10, next_run: true });
    const theirs = await b.createTask(scope, { session_id: session.id, type: 'demo' });
    const done = await a.commitTurn(scope, {
      update_tasks: [{ id: mine.id, expected_version: 1, patch: { state: 'COLLECTING' } }],
      list_open_tasks: { session_id: session.id, limit: 10 },
    });
    expect(done.open_tasks?.map((t) => t.id)).toEqual([theirs.id, mine.id]);
    // Known and unchanged, the list is the head's with the batch's writes: the same as read.
    const again = await a.commitTurn(scope, {
      update_tasks: [{ id: mine.id, expected_version: 2, patch: { state: 'CONFIRMING' } }],
      list_open_tasks: { session_id: session.id, limit: 10 },
    });
    const listed = await b.listTasks(scope, { session_id: session.id, state: [...OPEN_TASK_STATES] });
    expect(again.open_tasks).toEqual(listed.items);
  });

  it('a memory item: one another store wrote keeps its created_at', async () => {
    const { a, b } = await twoStores();
    const scope = freshScope();
    // `a` knows the item absent (it deleted it), `b` writes it, then `a` writes it again.
    await a.putMemory(scope, { namespace: 'n', key: 'k', value: 1 });
    expect(await a.deleteMemory(scope, 'n', 'k')).toBe(true);
    const theirs = await b.putMemory(scope, { namespace: 'n', key: 'k', value: 2 });
    await new Promise((resolve) => setTimeout(resolve, 5));
    const mine = await a.putMemory(scope, { namespace: 'n', key: 'k', value: 3 });
    expect(mine.created_at).toBe(theirs.created_at);
    expect(await b.getMemory(scope, 'n', 'k')).toEqual(mine);
    // Known present, deleted by `b`: `a`'s delete answers that none was there.
    await b.deleteMemory(scope, 'n', 'k');
    expect(await a.deleteMemory(scope, 'n', 'k')).toBe(false);
  });

  it('an action: completed by another store, it is not completed twice', async () => {
    const { a, b } = await twoStores();
    const scope = freshScope();
    const session = await a.createSession(scope, {});
    const task = await a.createTask(scope, { session_id: session.id, type: 'demo' });
    const { action } = await a.beginAction(scope, {
      task_id: task.id,
      type: 'call',
      params: null,
      idempotency_key: 'k1',
    });
    const done = await b.completeAction(scope, action.id, { status: 'SUCCESS', result: 'b' });
    const again = await a
      .completeAction(scope, action.id, { status: 'SUCCESS', result: 'b' })
      .catch((e) => e);
    const fresh = await b
      .completeAction(scope, action.id, { status: 'SUCCESS', result: 'b' })
      .catch((e) => e);
    // `a` answers as `b`, which read it: the same outcome, and the action as `b` completed it.
    expect(again).toEqual(fresh);
    expect(await a.getAction(scope, action.id)).toEqual(done);
    // A key another store began is found, not begun again.
    const other = await b.beginAction(scope, {
      task_id: task.id,
      type: 'call',
      params: null,
      idempotency_key: 'k2',
    });
    const found = await a.beginAction(scope, {
      task_id: task.id,
      type: 'call',
      params: null,
      idempotency_key: 'k2',
    });
    expect(found).toEqual({ action: other.action, created: false });
  });
});
