/**
 * Cancelling a run: at every kind of point a cancel can arrive (before the run's model calls, during an
 * action's effect, during its last action, through the store as another instance would ask), the run
 * stops at its next safe point, never between an action's record and its effect: every action it began
 * has its outcome recorded, the run's log ends with run.cancelled, its input stays as a cancelled message,
 * and the session's next turn is a new run that works.
 */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DEPLOY_STEPS } from '../../src/agents/tool-params.js';
import { isAgentStateError } from '../../src/core/errors.js';
import type { RunEvent } from '../../src/core/model.js';
import { createRulesModel } from '../../src/models/rules/index.js';
import { createModelRegistry, type Model } from '../../src/models/types.js';
import { CANCEL_NAMESPACE, requestCancel } from '../../src/runtime/cancel.js';
import { createToolRegistry, type Tool } from '../../src/runtime/tool.js';
import { runTurn } from '../../src/runtime/turn.js';
import { createMemoryStore } from '../../src/store/memory/index.js';
import type { Scope, StateStore } from '../../src/store/types.js';
import { ledgerTool, readLedger } from './ledger-tools.js';
import { freshScope, runtimeOptions, tempDir } from './setup.js';

const temp = tempDir();
afterAll(() => temp.cleanup());
let counter = 0;

type Hook = (ctx: { store: StateStore; scope: Scope; sessionId: string; runId: string }) => Promise<void>;

/** The deploy agent's tools writing a ledger, with `during` run inside the named tool's effect. */
async function setup(during: Partial<Record<string, Hook>> = {}, beforeExtract?: Hook) {
  const store = createMemoryStore();
  const scope = freshScope();
  const ledger = join(temp.dir, `cancel-${++counter}.jsonl`);
  const session = await store.createSession(scope, { agent: 'deploy_pipeline' });
  let runId = '';
  const ctx = () => ({ store, scope, sessionId: session.id, runId });
  const tools = createToolRegistry(
    ['airline.book', ...DEPLOY_STEPS].map((name): Tool => {
      const inner = ledgerTool(name, { ledger });
      const hook = during[name];
      if (hook === undefined) return inner;
      return {
        ...inner,
        async execute(params, context) {
          await hook(ctx());
          return inner.execute(params, context);
        },
      };
    }),
  );
  const rules = createRulesModel();
  const model: Model = {
    ...rules,
    async extract(request) {
      if (beforeExtract !== undefined) await beforeExtract(ctx());
      return rules.extract(request);
    },
  };
  const options = {
    ...runtimeOptions(store, scope, session.id, tools),
    models: createModelRegistry([model]),
    onRun: (id: string) => {
      runId = id;
    },
  };
  const events = async () => store.listRunEvents(scope, session.id, runId, { limit: 1000 });
  return { store, scope, ledger, session, options, events, runId: () => runId };
}

async function cancelled(work: Promise<unknown>): Promise<void> {
  const error = await work.then(
    () => null,
    (e: unknown) => e,
  );
  expect(isAgentStateError(error, 'conflict')).toBe(true);
  expect((error as { details?: { cancelled?: boolean } }).details?.cancelled).toBe(true);
}

function types(events: readonly RunEvent[]): string[] {
  return events.map((event) => event.type);
}

async function expectClean(t: Awaited<ReturnType<typeof setup>>, input: string) {
  // No action between its record and its effect: every action has an outcome, each effect is recorded once.
  const actions = (await t.store.listActions(t.scope, { limit: 100 })).items;
  expect(actions.filter((a) => a.status === 'PENDING')).toEqual([]);
  const ledger = readLedger(t.ledger).map((line) => line.tool);
  expect(
    actions
      .filter((a) => a.status === 'SUCCESS')
      .map((a) => a.tool)
      .sort(),
  ).toEqual([...ledger].sort());
  const log = await t.events();
  expect(types(log).at(-1)).toBe('run.cancelled');
  expect(types(log).filter((type) => type.startsWith('run.') && type !== 'run.started')).toEqual([
    'run.cancelled',
  ]);
  const messages = await t.store.listMessages(t.scope, t.session.id);
  expect(messages.at(-1)).toMatchObject({ role: 'user', content: input });
  expect(messages.at(-1)?.metadata).toMatchObject({ run_id: t.runId(), cancelled: true });
  // The next turn is a new run, and the session works.
  const cancelledRun = t.runId();
  const next = await runTurn({ ...t.options, input: 'status?' });
  expect(next.run_id).not.toBe(cancelledRun);
  return { actions, ledger, next };
}

describe('cancelling a run', () => {
  it('before its model calls: stops at the next one, nothing of the turn but its cancelled input', async () => {
    let once = true;
    const t = await setup({}, async ({ store, scope, sessionId, runId }) => {
      if (once) await requestCancel(store, scope, sessionId, runId);
      once = false;
    });
    await cancelled(runTurn({ ...t.options, input: 'deploy web' }));
    const { ledger } = await expectClean(t, 'deploy web');
    expect(ledger).toEqual([]);
  });

  it('during an action: the action finishes and is recorded, the run stops before the next one', async () => {
    const t = await setup({
      'deploy.build': async ({ store, scope, sessionId, runId }) => {
        await requestCancel(store, scope, sessionId, runId);
      },
    });
    await cancelled(runTurn({ ...t.options, input: 'deploy web' }));
    const { actions, ledger } = await expectClean(t, 'deploy web');
    expect(ledger).toEqual(DEPLOY_STEPS.slice(0, DEPLOY_STEPS.indexOf('deploy.build') + 1));
    expect(actions.find((a) => a.tool === 'deploy.build')?.status).toBe('SUCCESS');
  });

  it('during the last action: no safe point is left, so the run completes', async () => {
    const last = DEPLOY_STEPS[DEPLOY_STEPS.length - 1] as string;
    const t = await setup({
      [last]: async ({ store, scope, sessionId, runId }) => {
        await requestCancel(store, scope, sessionId, runId);
      },
    });
    const out = await runTurn({ ...t.options, input: 'deploy web' });
    expect(out.tasks[0]?.state).toBe('DONE');
    expect(types(await t.events()).at(-1)).toBe('run.completed');
    expect(readLedger(t.ledger).map((line) => line.tool)).toEqual([...DEPLOY_STEPS]);
  });

  it('asked through the store, as another instance asks: seen at the next safe point after a read', async () => {
    const t = await setup({
      'deploy.plan': async ({ store, scope, runId }) => {
        // Not `requestCancel` (which also tells this process at once): only the stored request.
        await store.putMemory(scope, {
          namespace: CANCEL_NAMESPACE,
          key: `cancel:${runId}`,
          value: { by: 'another instance' },
          ttl_seconds: 60,
        });
        await new Promise((resolve) => setTimeout(resolve, 300));
      },
    });
    await cancelled(runTurn({ ...t.options, input: 'deploy web' }));
    const { ledger } = await expectClean(t, 'deploy web');
    expect(ledger).toEqual(['deploy.plan']);
  });

  it('a cancel for a run that never comes changes nothing', async () => {
    const t = await setup();
    await requestCancel(t.store, t.scope, t.session.id, 'run_notarun');
    const out = await runTurn({ ...t.options, input: 'deploy web' });
    expect(out.tasks[0]?.state).toBe('DONE');
  });

  it('asked through the store: read at every safe point with cancelCheckMs 0, never with a long one', async () => {
    const storedCancel: Hook = async ({ store, scope, runId }) => {
      await store.putMemory(scope, {
        namespace: CANCEL_NAMESPACE,
        key: `cancel:${runId}`,
        value: { by: 'another instance' },
        ttl_seconds: 60,
      });
    };
    const eager = await setup({ 'deploy.plan': storedCancel });
    await cancelled(runTurn({ ...eager.options, cancelCheckMs: 0, input: 'deploy web' }));
    const { ledger } = await expectClean(eager, 'deploy web');
    expect(ledger).toEqual(['deploy.plan']);
    const lazy = await setup({ 'deploy.plan': storedCancel });
    const out = await runTurn({ ...lazy.options, cancelCheckMs: 3_600_000, input: 'deploy web' });
    expect(out.tasks[0]?.state).toBe('DONE');
    expect(readLedger(lazy.ledger).map((line) => line.tool)).toEqual([...DEPLOY_STEPS]);
  });

  it('refuses a cancelCheckMs that is not a whole number of ms up to an hour, running nothing', async () => {
    const t = await setup();
    for (const bad of [-5, 0.5, Number.POSITIVE_INFINITY, 3_600_001]) {
      await expect(runTurn({ ...t.options, cancelCheckMs: bad, input: 'deploy web' })).rejects.toThrow(
        `cancelCheckMs: must be a whole number of ms from 0 to 3600000, got ${bad}`,
      );
    }
    expect(await t.store.listMessages(t.scope, t.session.id)).toEqual([]);
    expect(readLedger(t.ledger)).toEqual([]);
  });
});
