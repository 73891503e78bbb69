/** agentstate's own stores, opened by URL and driven through the public StateStore API. */
import { join } from 'node:path';
import type { OpenStoreOptions } from '../../../store/open.js';
import { openStore } from '../../../store/open.js';
import type { Scope, StateStore } from '../../../store/types.js';
import { heapAfterGc } from '../heap.js';
import { sqliteBaseline, sqliteGrowth } from '../sqlite-size.js';
import { type OpenSystem, type ReadBack, readBack, type StoredBytes, type SystemSpec } from '../system.js';

function fromCheckpoint(checkpoint: { step: number; channels: { messages?: unknown } } | null): ReadBack {
  if (checkpoint === null) throw new Error('agentstate: no checkpoint found');
  return readBack(checkpoint.step, checkpoint.channels.messages);
}

/**
 * Drives a store; `measure` reports the stored bytes (and may close the store to do so). With `cleanUp`
 * (stores on a shared server), closing first removes every checkpoint the bench wrote.
 */
export function agentstateDriver(
  store: StateStore,
  tag: string,
  measure: (store: StateStore) => Promise<StoredBytes | null>,
  cleanUp = false,
): OpenSystem {
  const scope: Scope = { tenant_id: `bench-${tag}`, user_id: 'bench-user' };
  const runId = (run: number) => `run_bench_${tag}_${run}`;
  const lastId = new Map<number, string>();
  return {
    async put(run, step, state) {
      const checkpoint = await store.putCheckpoint(scope, {
        run_id: runId(run),
        step,
        parent_id: step === 0 ? null : (lastId.get(run) ?? null),
        channels: { messages: state.messages, task: state.task },
        metadata: { source: 'loop', step },
      });
      lastId.set(run, checkpoint.id);
    },
    async latest(run) {
      return fromCheckpoint(await store.latestCheckpoint(scope, runId(run)));
    },
    async history(run, limit) {
      const page = await store.listCheckpoints(scope, runId(run), { limit });
      return page.items.map((item) => fromCheckpoint(item));
    },
    async storedBytes() {
      return measure(store);
    },
    async close() {
      if (cleanUp) {
        for (const run of lastId.keys()) await store.pruneCheckpoints(scope, runId(run), 0).catch(() => 0);
      }
      await store.close();
    },
  };
}

export const agentstateMemory: SystemSpec = {
  name: 'agentstate-memory',
  family: 'agentstate',
  backend: 'memory',
  async open(context) {
    const baseline = heapAfterGc();
    const store = await openStore('memory:');
    // The store keeps plain objects, and parts equal to a run's previous checkpoint once: the heap it holds.
    return agentstateDriver(store, context.tag, async () => ({
      method: 'V8 heap in use after a full GC, over the heap before the store opened',
      bytes: Math.max(0, heapAfterGc() - baseline),
    }));
  },
};

export const agentstateSqlite: SystemSpec = {
  name: 'agentstate-sqlite',
  family: 'agentstate',
  backend: 'sqlite',
  async open(context) {
    const path = join(context.dir, 'agentstate.db');
    const options: OpenStoreOptions = { sqliteSynchronous: context.synchronous };
    await (await openStore(`sqlite:${path}`, options)).close(); // the schema alone: the baseline
    const baseline = sqliteBaseline(path);
    const store = await openStore(`sqlite:${path}`, options);
    return agentstateDriver(store, context.tag, async (s) => {
      await s.close();
      return sqliteGrowth(path, baseline);
    });
  },
};
