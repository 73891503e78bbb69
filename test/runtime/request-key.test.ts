/**
 * A turn retried with its request key (HTTP Idempotency-Key) after its answer was lost: when the turn had
 * committed (the process died after its final commit, before answering), the retry gets that turn's answer
 * and runs nothing again; when it had not, the interrupted run is finished; another key runs the input anew.
 */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DEPLOY_STEPS } from '../../src/agents/tool-params.js';
import { runTurn } from '../../src/runtime/turn.js';
import { createMemoryStore } from '../../src/store/memory/index.js';
import type { StateStore, TurnBatch } from '../../src/store/types.js';
import { SimulatedCrash } from './faults.js';
import { ledgerTools, readLedger } from './ledger-tools.js';
import { freshScope, runtimeOptions, tempDir } from './setup.js';

const temp = tempDir();
afterAll(() => temp.cleanup());
let counter = 0;

/** The store, dying right after the run's final commit lands (label 'turn'). */
function diesAfterFinalCommit(store: StateStore): StateStore {
  let armed = true;
  return new Proxy(store, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (property !== 'commitTurn') return typeof value === 'function' ? value.bind(target) : value;
      return async (...args: Parameters<StateStore['commitTurn']>) => {
        const written = await target.commitTurn(...args);
        if (armed && (args[1] as TurnBatch).checkpoint?.label === 'turn') {
          armed = false;
          throw new SimulatedCrash('the process died after the final commit');
        }
        return written;
      };
    },
  });
}

async function setup() {
  const store = createMemoryStore();
  const scope = freshScope();
  const ledger = join(temp.dir, `key-${++counter}.jsonl`);
  const session = await store.createSession(scope, { agent: 'deploy_pipeline' });
  const options = (s: StateStore = store) => runtimeOptions(s, scope, session.id, ledgerTools(ledger));
  return { store, scope, ledger, session, options };
}

describe('a turn retried with its request key', () => {
  it('after its final commit landed: the same answer, nothing run or written twice', async () => {
    const t = await setup();
    await expect(
      runTurn({ ...t.options(diesAfterFinalCommit(t.store)), input: 'deploy web', requestKey: 'k-1' }),
    ).rejects.toThrow(SimulatedCrash);
    const messages = await t.store.listMessages(t.scope, t.session.id);
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant']);
    const retry = await runTurn({ ...t.options(), input: 'deploy web', requestKey: 'k-1' });
    expect(retry.tasks[0]?.state).toBe('DONE');
    expect(retry.run_id).toBe(messages[0]?.metadata.run_id);
    expect(await t.store.listMessages(t.scope, t.session.id)).toEqual(messages);
    expect(readLedger(t.ledger).map((line) => line.tool)).toEqual([...DEPLOY_STEPS]);
    // Again: the same answer, byte for byte.
    expect(await runTurn({ ...t.options(), input: 'deploy web', requestKey: 'k-1' })).toEqual(retry);
  });

  it('without the key, or with another one, the input is a new turn', async () => {
    const t = await setup();
    const first = await runTurn({ ...t.options(), input: 'status?', requestKey: 'k-a' });
    const other = await runTurn({ ...t.options(), input: 'status?', requestKey: 'k-b' });
    const plain = await runTurn({ ...t.options(), input: 'status?' });
    expect(new Set([first.run_id, other.run_id, plain.run_id]).size).toBe(3);
    expect(await t.store.listMessages(t.scope, t.session.id)).toHaveLength(6);
  });
});
