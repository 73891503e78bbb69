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

describe('round trips of a booking turn on PostgreSQL', () => {
  it('a slot-filling turn takes 4 (the first 5), the confirming turn 7', async () => {
    const store = await openPostgresStore({ url: POSTGRES_URL, schema: schemas() });
    try {
      const clock = new ManualClock(START);
      const scope = freshScope();
      const ledger = join(temp.dir, 'round-trips.jsonl');
      const session = await store.createSession(scope, {
        agent: 'flight_booking',
        context: { language: 'en' },
      });
      const counts: number[] = [];
      for (const input of INPUTS) {
        const before = statementsSent.postgres;
        const answer = await runTurn({
          ...runtimeOptions(store, scope, session.id, ledgerTools(ledger), clock),
          recovery: { instanceId: 'round-trips', incarnation: 'test' },
          input,
        });
        counts.push(statementsSent.postgres - before);
        // What the turn answers is what the store holds.
        expect(answer.session).toEqual(await store.getSession(scope, session.id));
        for (const task of answer.tasks) expect(task).toEqual(await store.getTask(scope, task.id));
        for (const action of answer.actions) expect(action).toEqual(await store.getAction(scope, action.id));
        clock.advance(1_000);
      }
      expect(readLedger(ledger)).toHaveLength(1);
      const tasks = await store.listTasks(scope, {});
      expect(tasks.items.map((task) => task.state)).toEqual(['DONE']);
      // No commit ran again in a transaction: each was its one statement.
      expect((store as SqlCoreStore).optimisticMisses).toBe(0);
      // The lease, the session's head, the start checkpoint and the final commit (the first turn also reads
      // the user's preferences); the confirming turn adds the run's mark before the begin commit, and its
      // removal after the final commit. Each commit is one statement: it reads nothing the head read.
      expect({ slot_filling: counts.slice(0, 4), confirming: counts[4] }).toEqual({
        slot_filling: [5, 4, 4, 4],
        confirming: 7,
      });
    } finally {
      await store.close();
    }
  });
});
