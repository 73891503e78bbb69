/** A completed run keeps only its last checkpoints; an interrupted one keeps all of them until it completes. */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runTurn } from '../../src/runtime/index.js';
import { createMemoryStore } from '../../src/store/memory/index.js';
import { ledgerTools } from './ledger-tools.js';
import { freshScope, runtimeOptions, tempDir } from './setup.js';

const temp = tempDir();
afterAll(() => temp.cleanup());

async function deployRun(keepCheckpoints: number | false) {
  const store = createMemoryStore();
  const scope = freshScope();
  const tools = ledgerTools(join(temp.dir, `prune-${String(keepCheckpoints)}.jsonl`));
  const session = await store.createSession(scope, { agent: 'deploy_pipeline' });
  const out = await runTurn({
    ...runtimeOptions(store, scope, session.id, tools),
    keepCheckpoints,
    input: 'deploy web',
  });
  const history = await store.listCheckpoints(scope, out.run_id, { limit: 500 });
  return { out, history: history.items };
}

describe('checkpoints of a completed run', () => {
  it('are pruned to the last N once the run completes, keeping the one the turn returns', async () => {
    const all = await deployRun(false);
    expect(all.out.reply).not.toBe('');
    expect(all.history.length).toBeGreaterThan(10);
    const pruned = await deployRun(4);
    expect(pruned.out.reply).toBe(all.out.reply);
    expect(pruned.history).toHaveLength(4);
    expect(pruned.history[0]?.id).toBe(pruned.out.checkpoint_id);
    expect(pruned.history.map((c) => c.step)).toEqual(all.history.slice(0, 4).map((c) => c.step));
  });

  it('refuses a keep that is not a positive whole number before running anything', async () => {
    const store = createMemoryStore();
    const scope = freshScope();
    const session = await store.createSession(scope, { agent: 'deploy_pipeline' });
    const tools = ledgerTools(join(temp.dir, 'prune-refused.jsonl'));
    const refused = runTurn({
      ...runtimeOptions(store, scope, session.id, tools),
      keepCheckpoints: 0,
      input: 'deploy',
    });
    await expect(refused).rejects.toThrow(/keepCheckpoints: must be a positive whole number/);
    expect(await store.listMessages(scope, session.id)).toEqual([]);
    expect((await store.listTasks(scope, { session_id: session.id })).items).toEqual([]);
  });
});
