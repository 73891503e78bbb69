/**
 * The PostgreSQL round trips of a flight booking's turns (issue 36): statements sent to the database
 * (`statementsSent`, the counter behind `agentstate_store_round_trips_total`) around each turn of one user,
 * run as the server runs them (recovery marks on). Counts, not times: each is what the turn's code sends.
 */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.js';
import { runTurn } from '../../src/runtime/turn.js';
import { openPostgresStore } from '../../src/store/postgres/index.js';
import type { SqlCoreStore } from '../../src/store/sql/core-store.js';
import { statementsSent } from '../../src/store/sql/executor.js';
import type { Scope, StateStore } from '../../src/store/types.js';
import { freshSchemas, POSTGRES_URL } from '../store/postgres-env.js';
import { ledgerTools, readLedger } from './ledger-tools.js';
import { freshScope, runtimeOptions, START, tempDir } from './setup.js';

const temp = tempDir();
afterAll(() => temp.cleanup());
const schemas = freshSchemas();

/** Route, date, cabin, name (slot filling), then the confirmation that books. */
const INPUTS = [
  'I want to book a flight from Beijing to Shanghai',
  'on 2027-03-14',
  'business class please',
  'my name is Ada Lovelace',
  'yes',
];

/** Runs the inputs as turns of the session; the statements each sent, checking each answer against the store. */
async function turns(
  store: StateStore,
  scope: Scope,
  sessionId: string,
  inputs: readonly string[],
  clock: ManualClock,
): Promise<number[]> {
  const ledger = join(temp.dir, `${scope.user_id}.jsonl`);
  const counts: number[] = [];
  for (const input of inputs) {
    const before = statementsSent.postgres;
    const answer = await runTurn({
      ...runtimeOptions(store, scope, sessionId, ledgerTools(ledger), clock),
      recovery: { instanceId: 'round-trips', incarnation: 'test' },
      // The run's start checkpoint waits for its first write, and the run reads no cancel request, however
      // long a loaded machine takes (past 50 ms the default writes the checkpoint on its own, past 250 ms it
      // reads for a cancel): the counts are the turn's code's, not the machine's.
      checkpointDeferMs: 600_000,
      cancelCheckMs: 600_000,
      input,
    });
    counts.push(statementsSent.postgres - before);
    // What the turn answers is what the store holds.
    expect(answer.session).toEqual(await store.getSession(scope, sessionId));
    for (const task of answer.tasks) expect(task).toEqual(await store.getTask(scope, task.id));
    for (const action of answer.actions) expect(action).toEqual(await store.getAction(scope, action.id));
    clock.advance(1_000);
  }
  return counts;
}

describe('round trips of a booking turn on PostgreSQL', () => {
  it('a slot-filling turn takes 2 (the first 3), the confirming turn 3', async () => {
    const schema = schemas();
    const store = (await openPostgresStore({ url: POSTGRES_URL, schema })) as SqlCoreStore;
    const again = (await openPostgresStore({ url: POSTGRES_URL, schema })) as SqlCoreStore;
    try {
      const clock = new ManualClock(START);
      const scope = freshScope();
      const session = await store.createSession(scope, {
        agent: 'flight_booking',
        context: { language: 'en' },
      });
      const counts = await turns(store, scope, session.id, INPUTS, clock);
      // The lease with the session's head (one statement) and the final commit (the first turn also reads
      // the user's preferences); the run's start checkpoint is never written, the run's first commit with a batch
      // taking it in. The confirming turn's commit that begins the booking writes the run's mark, and its
      // final commit removes it (`other_memory`). Each commit is one statement: it reads nothing the head
      // read or an earlier commit wrote.
      expect({ slot_filling: counts.slice(0, 4), confirming: counts[4] }).toEqual({
        slot_filling: [3, 2, 2, 2],
        confirming: 3,
      });
      // A second booking, on a store that never wrote the preferences it now writes again (another
      // process): it knows them from the first turn's read of them. (That first turn, in a longer session,
      // reads more after its commit, besides the commits: not pinned here.)
      const second = await turns(
        again,
        scope,
        session.id,
        [...INPUTS.slice(0, 2), 'yes', 'yes', 'yes'],
        clock,
      );
      expect(second.slice(1)).toEqual([2, 2, 2, 3]);
      expect(readLedger(join(temp.dir, `${scope.user_id}.jsonl`))).toHaveLength(2);
      const tasks = await store.listTasks(scope, {});
      expect(tasks.items.map((task) => task.state)).toEqual(['DONE', 'DONE']);
      // No commit ran again in a transaction: each was its one statement.
      expect(store.optimisticMisses + again.optimisticMisses).toBe(0);
    } finally {
      await store.close();
      await again.close();
    }
  });

  it('turns run by two stores in turn (two turn threads): each commit one statement still', async () => {
    const schema = schemas();
    const stores = [
      (await openPostgresStore({ url: POSTGRES_URL, schema })) as SqlCoreStore,
      (await openPostgresStore({ url: POSTGRES_URL, schema })) as SqlCoreStore,
    ];
    try {
      const clock = new ManualClock(START);
      const scope = freshScope();
      const session = await stores[0]!.createSession(scope, {
        agent: 'flight_booking',
        context: { language: 'en' },
      });
      const counts: number[] = [];
      // 1, 2 on the first; 3 on the second; 4 on the first (which wrote the task two versions ago); 5 on the
      // second.
      for (const [i, input] of INPUTS.entries()) {
        const store = stores[i === 2 || i === 4 ? 1 : 0] as SqlCoreStore;
        counts.push(...(await turns(store, scope, session.id, [input], clock)));
      }
      // Each commit still one statement: the head read refreshes the open tasks each store knows, so the
      // first store's copy of the task (two versions old at turn 4) is no stale guess. Turns 3 to 5 read 3
      // more after their commit: the compaction check of a process that did not see the session's earlier
      // turns grow it (runtime/compaction.ts), not the store's commits.
      expect(counts).toEqual([3, 2, 5, 5, 6]);
      expect(stores[0]!.optimisticMisses + stores[1]!.optimisticMisses).toBe(0);
    } finally {
      for (const store of stores) await store.close();
    }
  });
});
