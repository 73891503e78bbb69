/**
 * Actions: retries with the same key, failures, time-outs through recovery, and recovery of a PENDING action
 * at resume with every lookup outcome; UNKNOWN blocks the task until a person resolves it, then it continues.
 */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DEPLOY_STEPS } from '../../src/agents/tool-params.js';
import { resumeRun, runTurn } from '../../src/runtime/turn.js';
import { createMemoryStore } from '../../src/store/memory/index.js';
import type { StateStore } from '../../src/store/types.js';
import { crashingStore, SimulatedCrash } from './faults.js';
import { type LedgerToolOptions, ledgerTools, readLedger } from './ledger-tools.js';
import { freshScope, runtimeOptions, tempDir } from './setup.js';

const temp = tempDir();
afterAll(() => temp.cleanup());
let counter = 0;

async function setup(
  perTool: Record<string, Omit<LedgerToolOptions, 'ledger'>> = {},
  store: StateStore = createMemoryStore(),
) {
  const scope = freshScope();
  const ledger = join(temp.dir, `ledger-${++counter}.jsonl`);
  const session = await store.createSession(scope, { agent: 'deploy_pipeline' });
  const options = (s: StateStore = store) =>
    runtimeOptions(s, scope, session.id, ledgerTools(ledger, perTool));
  return { store, scope, ledger, session, options };
}

const DONE_REPLY = 'Deployed web latest to staging: https://web.staging.example (5 steps).';

describe('actions', () => {
  it('runs five tool calls with a checkpoint before and after each (after the last: the final one)', async () => {
    const { store, scope, ledger, options } = await setup();
    const out = await runTurn({ ...options(), input: 'deploy web' });
    expect(out.reply).toBe(DONE_REPLY);
    expect(out.tasks[0]?.state).toBe('DONE');
    expect(out.actions.map((a) => [a.tool, a.status])).toEqual(DEPLOY_STEPS.map((tool) => [tool, 'SUCCESS']));
    expect(readLedger(ledger).map((line) => line.tool)).toEqual([...DEPLOY_STEPS]);
    const labels = (await store.listCheckpoints(scope, out.run_id, { limit: 50 })).items
      .map((c) => c.label)
      .reverse();
    // The run's start checkpoint is taken into its first commit with a batch (run-context.ts `commitLater`).
    expect(labels).toEqual([
      'collecting',
      'confirming',
      ...DEPLOY_STEPS.flatMap((tool, i) =>
        i + 1 < DEPLOY_STEPS.length
          ? [`before ${tool} (step ${i + 1})`, `after ${tool} (step ${i + 1})`]
          : [`before ${tool} (step ${i + 1})`],
      ),
      'turn',
    ]);
    // The final checkpoint is the one after the last call: the call's result is written with it.
    const final = await store.getCheckpoint(scope, out.checkpoint_id);
    expect(final?.label).toBe('turn');
    const deploy = out.actions.at(-1);
    expect(deploy).toMatchObject({ tool: 'deploy.deploy', status: 'SUCCESS' });
    expect(deploy?.result).toMatchObject({ url: 'https://web.staging.example' });
    // Each step gets the result of the one before.
    expect(readLedger(ledger)[1]?.params).toMatchObject({ service: 'web', plan: { step: 'deploy.plan' } });
  });

  it('retries a retryable error with the same key and counts the attempt', async () => {
    const { ledger, options } = await setup({ 'deploy.build': { faults: ['retryable', 'retryable'] } });
    const out = await runTurn({ ...options(), input: 'deploy web' });
    expect(out.reply).toBe(DONE_REPLY);
    const build = out.actions.find((a) => a.tool === 'deploy.build');
    expect(build?.attempts).toBe(3);
    const builds = readLedger(ledger).filter((line) => line.tool === 'deploy.build');
    expect(builds.map((line) => line.key)).toEqual([build?.idempotency_key]);
  });

  it('fails the task when the downstream refuses', async () => {
    const { ledger, options } = await setup({ 'deploy.run_tests': { faults: ['rejected'] } });
    const out = await runTurn({ ...options(), input: 'deploy web' });
    expect(out.tasks[0]?.state).toBe('FAILED');
    expect(out.tasks[0]?.status_line).toContain('failed: deploy.run_tests: refused by the downstream');
    expect(out.actions.at(-1)).toMatchObject({ tool: 'deploy.run_tests', status: 'FAILED' });
    expect(out.reply).toContain('failed');
    expect(readLedger(ledger)).toHaveLength(2);
  });

  it('recovers an unknown outcome through lookup: found after the effect, run again when not found', async () => {
    const after = await setup({ 'deploy.build': { faults: ['crash_after_effect'] } });
    const out = await runTurn({ ...after.options(), input: 'deploy web' });
    expect(out.reply).toBe(DONE_REPLY);
    expect(readLedger(after.ledger)).toHaveLength(5);
    const before = await setup({ 'deploy.build': { faults: ['crash_before_effect'] } });
    const again = await runTurn({ ...before.options(), input: 'deploy web' });
    expect(again.reply).toBe(DONE_REPLY);
    expect(again.actions.find((a) => a.tool === 'deploy.build')?.attempts).toBe(2);
    expect(readLedger(before.ledger)).toHaveLength(5);
  });

  it('treats a time-out as unknown, not as a failure', async () => {
    const { ledger, options } = await setup({ 'deploy.plan': { faults: ['hang_after_effect'] } });
    const out = await runTurn({
      ...options(),
      input: 'deploy web',
      retry: { timeoutMs: 150, baseDelayMs: 1 },
    });
    expect(out.reply).toBe(DONE_REPLY);
    expect(readLedger(ledger)).toHaveLength(5);
  });
});

describe('recovery of a PENDING action at resume', () => {
  // commitTurn calls of a deploy turn: 1 create, 2 confirming, then before/after each step, the first
  // "before" with the move to EXECUTING (step 3 = deploy.run_tests: before 7, after 8), then before step 5
  // (11) and the final one (12), which writes step 5's result.
  it('lookup found: SUCCESS with the downstream’s result, no second side effect', async () => {
    const t = await setup();
    await expect(runTurn({ ...t.options(crashingStore(t.store, 8)), input: 'deploy web' })).rejects.toThrow(
      SimulatedCrash,
    );
    expect(readLedger(t.ledger)).toHaveLength(3);
    const pending = await t.store.listActions(t.scope, { status: 'PENDING' });
    expect(pending.items.map((a) => a.tool)).toEqual(['deploy.run_tests']);
    const out = await resumeRun(t.options());
    expect(out?.resumed).toBe(true);
    expect(out?.reply).toBe(DONE_REPLY);
    expect(readLedger(t.ledger).map((l) => l.tool)).toEqual([...DEPLOY_STEPS]);
    expect(out?.actions.find((a) => a.tool === 'deploy.run_tests')?.attempts).toBe(1);
  });

  it('a crash after the last call, before the final commit that writes its result: lookup, no second effect', async () => {
    const t = await setup();
    await expect(runTurn({ ...t.options(crashingStore(t.store, 12)), input: 'deploy web' })).rejects.toThrow(
      SimulatedCrash,
    );
    expect(readLedger(t.ledger).map((l) => l.tool)).toEqual([...DEPLOY_STEPS]);
    const pending = await t.store.listActions(t.scope, { status: 'PENDING' });
    expect(pending.items.map((a) => a.tool)).toEqual(['deploy.deploy']);
    const task = (await t.store.listTasks(t.scope, { session_id: t.session.id })).items[0];
    expect(task?.state).toBe('EXECUTING');
    // The turn's messages go with the task's final state, never before it.
    expect(await t.store.listMessages(t.scope, t.session.id)).toEqual([]);
    const out = await resumeRun(t.options());
    expect(out?.resumed).toBe(true);
    expect(out?.reply).toBe(DONE_REPLY);
    expect(out?.tasks[0]?.state).toBe('DONE');
    expect(out?.actions.find((a) => a.tool === 'deploy.deploy')).toMatchObject({
      status: 'SUCCESS',
      attempts: 1,
      result: { url: 'https://web.staging.example' },
    });
    expect(readLedger(t.ledger)).toHaveLength(5);
    expect((await t.store.listMessages(t.scope, t.session.id)).map((m) => m.role)).toEqual([
      'user',
      'assistant',
    ]);
  });

  it('lookup not found: runs again with the same key', async () => {
    const t = await setup();
    await expect(
      runTurn({ ...t.options(crashingStore(t.store, 7, 'after')), input: 'deploy web' }),
    ).rejects.toThrow(SimulatedCrash);
    expect(readLedger(t.ledger)).toHaveLength(2);
    const out = await resumeRun(t.options());
    expect(out?.reply).toBe(DONE_REPLY);
    const tests = out?.actions.find((a) => a.tool === 'deploy.run_tests');
    expect(tests?.attempts).toBe(2);
    expect(readLedger(t.ledger).find((l) => l.tool === 'deploy.run_tests')?.key).toBe(tests?.idempotency_key);
  });

  it('no lookup: UNKNOWN blocks the task until a person resolves it, then it continues', async () => {
    const t = await setup({ 'deploy.run_tests': { lookup: 'none' } });
    await expect(runTurn({ ...t.options(crashingStore(t.store, 8)), input: 'deploy web' })).rejects.toThrow(
      SimulatedCrash,
    );
    const blocked = await resumeRun(t.options());
    const action = blocked?.actions.find((a) => a.tool === 'deploy.run_tests');
    expect(action?.status).toBe('UNKNOWN');
    expect(action?.note).toContain('no lookup');
    expect(blocked?.tasks[0]?.state).toBe('EXECUTING');
    expect(blocked?.tasks[0]?.status_line).toMatch(
      /blocked: deploy\.run_tests \(act_\w+\) may or may not have happened/,
    );
    expect(blocked?.reply).toContain('A person needs to check it');
    // Still blocked on the next turn; nothing runs again.
    const still = await runTurn({ ...t.options(), input: 'status?' });
    expect(still.tasks[0]?.status_line).toContain('blocked');
    expect(readLedger(t.ledger)).toHaveLength(3);
    // A person looks at the ledger and resolves it; the next turn continues the pipeline.
    const line = readLedger(t.ledger).find((l) => l.tool === 'deploy.run_tests');
    await t.store.resolveAction(t.scope, action!.id, {
      status: 'SUCCESS',
      result: line!.result,
      note: 'checked the ledger',
    });
    const done = await runTurn({ ...t.options(), input: 'continue' });
    expect(done.tasks[0]?.state).toBe('DONE');
    expect(done.reply).toContain(DONE_REPLY);
    expect(readLedger(t.ledger).map((l) => l.tool)).toEqual([...DEPLOY_STEPS]);
  });

  it('ambiguous lookup: UNKNOWN; resolved FAILED, the task fails on the next turn', async () => {
    const t = await setup({ 'deploy.run_tests': { lookup: 'ambiguous' } });
    await expect(runTurn({ ...t.options(crashingStore(t.store, 8)), input: 'deploy web' })).rejects.toThrow(
      SimulatedCrash,
    );
    const blocked = await resumeRun(t.options());
    const action = blocked?.actions.find((a) => a.tool === 'deploy.run_tests');
    expect(action).toMatchObject({ status: 'UNKNOWN' });
    expect(action?.note).toContain('ambiguous: the downstream is being migrated');
    await t.store.resolveAction(t.scope, action!.id, {
      status: 'FAILED',
      error: { code: 'not_done', message: 'the tests never ran' },
      note: 'ops: checked by hand',
    });
    const failed = await resumeRun(t.options());
    expect(failed?.resumed).toBe(false);
    const next = await runTurn({ ...t.options(), input: 'and now?' });
    expect(next.tasks[0]?.state).toBe('FAILED');
    expect(next.tasks[0]?.status_line).toContain('the tests never ran');
    expect(readLedger(t.ledger)).toHaveLength(3);
  });
});

describe('retry after FAILED', () => {
  it('goes back to collecting on a change, confirms again and books with a new key', async () => {
    const store = createMemoryStore();
    const scope = freshScope();
    const ledger = join(temp.dir, `retry-${++counter}.jsonl`);
    const tools = ledgerTools(ledger, { 'airline.book': { faults: ['rejected'] } });
    const session = await store.createSession(scope, {
      agent: 'flight_booking',
      context: { timezone: 'Asia/Shanghai' },
    });
    const turn = (input: string) => runTurn({ ...runtimeOptions(store, scope, session.id, tools), input });
    await turn('Book first class from Shanghai to Beijing tomorrow, my name is Li Lei');
    const failed = await turn('yes');
    expect(failed.tasks[0]?.state).toBe('FAILED');
    expect(failed.reply).toContain('failed: airline.book: refused by the downstream');
    const again = await turn('economy then');
    expect(again.tasks[0]?.state).toBe('CONFIRMING');
    expect(again.tasks[0]?.data).toMatchObject({ round: 1 });
    const booked = await turn('yes');
    expect(booked.tasks[0]?.state).toBe('DONE');
    const actions = (await store.listActions(scope, { task_id: booked.tasks[0]!.id })).items;
    expect(actions.map((a) => a.status).sort()).toEqual(['FAILED', 'SUCCESS']);
    expect(new Set(actions.map((a) => a.idempotency_key)).size).toBe(2);
    expect(readLedger(ledger).map((l) => (l.params as { cabin_class: string }).cabin_class)).toEqual([
      'economy',
    ]);
    const events = await store.listTaskEvents(scope, booked.tasks[0]!.id);
    expect(events.map((e) => e.to_state)).toEqual([
      'COLLECTING',
      'CONFIRMING',
      'EXECUTING',
      'FAILED',
      'COLLECTING',
      'CONFIRMING',
      'EXECUTING',
      'DONE',
    ]);
  });
});
