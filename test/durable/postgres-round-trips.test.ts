/**
 * The PostgreSQL round trips a durable run makes (statements sent to the database, each a round trip there):
 * its start takes the session's lease with the session in one statement (`getSessionHead`'s `lease`).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/core/ids.js';
import { type DurableRunOptions, durableRun } from '../../src/durable/index.js';
import { statementsSent } from '../../src/store/sql/executor.js';
import type { StateStore } from '../../src/store/types.js';
import { freshScope, postgresStore } from './stores.js';

const pg = postgresStore();
afterAll(() => pg.cleanup());

async function sent<T>(work: () => Promise<T>): Promise<{ result: T; statements: number }> {
  const before = statementsSent.postgres;
  const result = await work();
  return { result, statements: statementsSent.postgres - before };
}

describe('round trips of a durable run on PostgreSQL', () => {
  it('a run of one step: the lease with the session, then its own reads and writes', async () => {
    const store: StateStore = await pg.open();
    try {
      const scope = freshScope();
      const { id } = await store.createSession(scope, { agent: null });
      const options: DurableRunOptions = { scope, sessionId: id, name: 'quote', key: 'q-1' };
      const first = await sent(() => durableRun(store, options, async (ctx) => ctx.step('price', () => 40)));
      expect(first.result).toMatchObject({ status: 'done', value: 40, resumed: false });
      // The lease with the session is one statement (it was two: the lease, then the session), and the
      // session it read spares the run's commit a read of its own.
      expect(first.statements).toBe(9);
      // Done already: the lease with the session, the task found finished and its value, the lease freed.
      const again = await sent(() => durableRun(store, options, async (ctx) => ctx.step('price', () => 41)));
      expect(again.result).toMatchObject({ status: 'done', value: 40 });
      expect(again.statements).toBe(4);
      // A session that is not there: one statement, and no lease taken.
      const missing = { ...options, sessionId: newId('session') };
      const none = await sent(() =>
        durableRun(store, missing, async () => 1).catch((error: unknown) => error),
      );
      expect(none.result).toMatchObject({ code: 'not_found' });
      expect(none.statements).toBe(1);
      expect(
        await store.acquireLease(scope, `session:${missing.sessionId}`, 'someone', 1_000),
      ).not.toBeNull();
    } finally {
      await store.close();
    }
  });
});
