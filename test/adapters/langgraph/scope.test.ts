/**
 * AgentStateSaver scope and storage: two savers of different users over one store never see each other's
 * threads (not by id, not in a list across threads, not through deleteThread), and a checkpoint stores only
 * what changed (unchanged channels are carried by reference, a growing list is stored as its new part).
 */
import type { RunnableConfig } from '@langchain/core/runnables';
import {
  type ChannelVersions,
  type Checkpoint,
  emptyCheckpoint,
  uuid6,
} from '@langchain/langgraph-checkpoint';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentStateSaver } from '../../../src/adapters/langgraph/index.js';
import { freshScope, type OpenedStore, openTestStore, type StoreName } from '../stores.js';

async function putChain(saver: AgentStateSaver, thread: string, steps: number, big = 'x'.repeat(20_000)) {
  let config: RunnableConfig = { configurable: { thread_id: thread, checkpoint_ns: '' } };
  const messages: string[] = [];
  for (let step = 0; step < steps; step++) {
    messages.push(`message ${step} of ${thread}`);
    const checkpoint: Checkpoint = {
      ...emptyCheckpoint(),
      id: uuid6(step),
      channel_values: { messages: [...messages], big, count: step },
      channel_versions: { messages: step + 1, big: 1, count: step + 1 },
    };
    const newVersions: ChannelVersions =
      step === 0 ? { messages: 1, big: 1, count: 1 } : { messages: step + 1, count: step + 1 };
    config = await saver.put(config, checkpoint, { source: 'loop', step, parents: {} }, newVersions);
  }
  return config;
}

async function all(saver: AgentStateSaver, config: RunnableConfig) {
  const out = [];
  for await (const tuple of saver.list(config)) out.push(tuple);
  return out;
}

describe.each<StoreName>(['memory', 'sqlite', 'postgres', 'redis', 'tiered'])(
  'AgentStateSaver scope over %s',
  (name) => {
    let opened: OpenedStore;
    beforeAll(async () => {
      opened = await openTestStore(name);
    });
    afterAll(() => opened?.cleanup());

    it('keeps the threads of two users apart', async () => {
      const tenant = freshScope().tenant_id;
      const alice = new AgentStateSaver({ store: opened.store, tenant_id: tenant, user_id: 'alice' });
      const bob = new AgentStateSaver({ store: opened.store, tenant_id: tenant, user_id: 'bob' });
      const aliceLast = await putChain(alice, 'shared-thread', 3);
      await putChain(bob, 'shared-thread', 2);
      await putChain(bob, 'bob-only', 1);

      expect((await alice.getTuple(aliceLast))?.checkpoint.channel_values).toMatchObject({ count: 2 });
      expect(await bob.getTuple(aliceLast)).toBeUndefined(); // alice's checkpoint id, in bob's scope
      expect(
        (await bob.getTuple({ configurable: { thread_id: 'shared-thread' } }))?.checkpoint.channel_values,
      ).toMatchObject({ count: 1, messages: ['message 0 of shared-thread', 'message 1 of shared-thread'] });
      expect(await alice.getTuple({ configurable: { thread_id: 'bob-only' } })).toBeUndefined();

      const aliceAll = await all(alice, {});
      expect(aliceAll.map((t) => t.config.configurable?.thread_id)).toEqual(Array(3).fill('shared-thread'));
      expect((await all(bob, {})).map((t) => t.config.configurable?.thread_id).sort()).toEqual([
        'bob-only',
        'shared-thread',
        'shared-thread',
      ]);

      await alice.deleteThread('shared-thread');
      expect(await all(alice, {})).toEqual([]);
      expect(await all(bob, { configurable: { thread_id: 'shared-thread' } })).toHaveLength(2);
    });

    it('refuses a put without a thread and a scope without a user', async () => {
      const saver = new AgentStateSaver({ store: opened.store, ...freshScope() });
      await expect(
        saver.put({ configurable: {} }, emptyCheckpoint(), { source: 'input', step: -1, parents: {} }, {}),
      ).rejects.toMatchObject({ code: 'invalid_request' });
      expect(() => new AgentStateSaver({ store: opened.store, tenant_id: 't', user_id: '' })).toThrow(
        /user_id/,
      );
    });
  },
);

describe('AgentStateSaver storage over sqlite', () => {
  it('stores an unchanged channel once and a growing list as its appended part', async () => {
    const opened = await openTestStore('sqlite');
    try {
      const saver = new AgentStateSaver({ store: opened.store, ...freshScope() });
      const steps = 30;
      const last = await putChain(saver, 'grow', steps);
      const tuple = await saver.getTuple(last);
      expect(tuple?.checkpoint.channel_values).toMatchObject({ count: steps - 1, big: 'x'.repeat(20_000) });
      expect(tuple?.checkpoint.channel_values).toHaveProperty('messages.length', steps);
      const db = new Database(opened.url.slice('sqlite:'.length), { readonly: true });
      try {
        const big = db
          .prepare("SELECT count(*) AS n FROM checkpoint_blobs WHERE data LIKE '%xxxxxxxxxx%'")
          .get() as { n: number };
        expect(big.n).toBe(1); // 30 checkpoints, one copy of the 20 kB channel
        const { bytes } = db.prepare('SELECT sum(length(data)) AS bytes FROM checkpoint_blobs').get() as {
          bytes: number;
        };
        // Whole lists every time would be ~30*31/2 messages of ~25 bytes (~12 kB) besides the 20 kB value.
        expect(bytes).toBeLessThan(20_000 + 6_000);
      } finally {
        db.close();
      }
    } finally {
      await opened.cleanup();
    }
  });
});
