/**
 * Replay: a resumed run takes every recorded result (store reads, clock, model answers, tool outcomes) from
 * its journal, so its output equals an uninterrupted run's, even with a model that answers differently on
 * every call.
 */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { JsonValue } from '../../src/core/json.js';
import { createRulesModel } from '../../src/models/rules/index.js';
import { createModelRegistry, type Model } from '../../src/models/types.js';
import { listSessionRuns, runIdFor } from '../../src/runtime/runs.js';
import { resumeRun, runTurn, type TurnOutput } from '../../src/runtime/turn.js';
import { createMemoryStore } from '../../src/store/memory/index.js';
import { crashingStore, SimulatedCrash } from './faults.js';
import { ledgerTools, readLedger } from './ledger-tools.js';
import { freshScope, runtimeOptions, tempDir } from './setup.js';

const temp = tempDir();
afterAll(() => temp.cleanup());

/** A model whose answers change with every call: the service it reads is web-1, web-2, ... */
function driftingModel(calls: { extract: number; reply: number }): Model {
  const rules = createRulesModel();
  return {
    name: 'drifting',
    async extract(request) {
      calls.extract++;
      const found = await rules.extract(request);
      const deploy = found.slots.deploy_pipeline;
      if (deploy?.service === undefined) return found;
      return {
        ...found,
        slots: { ...found.slots, deploy_pipeline: { ...deploy, service: `web-${calls.extract}` } },
      };
    },
    route: (request) => rules.route(request),
    async reply(request) {
      calls.reply++;
      return `${request.draft} [reply ${calls.reply}]`;
    },
  };
}

function comparable(out: TurnOutput | null) {
  return {
    reply: out?.reply,
    tasks: out?.tasks.map((t) => ({
      type: t.type,
      state: t.state,
      slots: t.slots,
      status_line: t.status_line,
    })),
    actions: out?.actions.map((a) => ({
      tool: a.tool,
      status: a.status,
      params: a.params,
      result: a.result,
    })),
  };
}

describe('replay', () => {
  it('a resumed run replays recorded model answers and ends exactly like an uninterrupted run', async () => {
    const scope = freshScope();
    const store = createMemoryStore();
    // Uninterrupted reference.
    const refCalls = { extract: 0, reply: 0 };
    const refLedger = join(temp.dir, 'reference.jsonl');
    const refSession = await store.createSession(scope, { agent: 'deploy_pipeline' });
    const reference = await runTurn({
      ...runtimeOptions(store, scope, refSession.id, ledgerTools(refLedger)),
      models: createModelRegistry([driftingModel(refCalls)]),
      model: 'drifting',
      input: 'deploy web',
    });
    expect(reference.reply).toBe(
      'Deployed web-1 latest to staging: https://web-1.staging.example (5 steps). [reply 1]',
    );

    // The same turn, killed after the third tool call ran (before its "after" checkpoint), then resumed by a
    // new runtime whose model has its own, fresh counter.
    const ledger = join(temp.dir, 'crashed.jsonl');
    const session = await store.createSession(scope, { agent: 'deploy_pipeline' });
    const crashCalls = { extract: 0, reply: 0 };
    await expect(
      runTurn({
        ...runtimeOptions(crashingStore(store, 8), scope, session.id, ledgerTools(ledger)),
        models: createModelRegistry([driftingModel(crashCalls)]),
        model: 'drifting',
        input: 'deploy web',
      }),
    ).rejects.toThrow(SimulatedCrash);
    expect(readLedger(ledger)).toHaveLength(3);
    expect(await listSessionRuns(store, scope, session.id)).toEqual([
      { run_id: runIdFor(session.id, 0), finished: false },
    ]);
    const resumeCalls = { extract: 0, reply: 0 };
    const resumed = await resumeRun({
      ...runtimeOptions(store, scope, session.id, ledgerTools(ledger)),
      models: createModelRegistry([driftingModel(resumeCalls)]),
    });
    expect(resumed?.resumed).toBe(true);
    expect(resumeCalls.extract).toBe(0); // the extraction was replayed, not asked again
    expect(resumeCalls.reply).toBe(1);
    expect(comparable(resumed)).toEqual(comparable(reference));
    expect(readLedger(ledger).map((l) => l.params)).toEqual(readLedger(refLedger).map((l) => l.params));

    // Resuming again finds nothing interrupted and returns the finished run's output.
    const again = await resumeRun({ ...runtimeOptions(store, scope, session.id, ledgerTools(ledger)) });
    expect(again?.resumed).toBe(false);
    expect(again?.reply).toBe(resumed?.reply);
    expect(again?.run_id).toBe(resumed?.run_id);
  });

  it('resumes a run recorded when the move to EXECUTING was a commit of its own', async () => {
    const scope = freshScope();
    const store = createMemoryStore();
    const input = 'deploy web 2.0.1 to production';
    const refSession = await store.createSession(scope, { agent: 'deploy_pipeline' });
    const reference = await runTurn({
      ...runtimeOptions(store, scope, refSession.id, ledgerTools(join(temp.dir, 'ref-old.jsonl'))),
      input,
    });
    // Killed before its third commit (the first tool call's begin): created and confirming are written.
    const ledger = join(temp.dir, 'old-format.jsonl');
    const session = await store.createSession(scope, { agent: 'deploy_pipeline' });
    await expect(
      runTurn({ ...runtimeOptions(crashingStore(store, 3), scope, session.id, ledgerTools(ledger)), input }),
    ).rejects.toThrow(SimulatedCrash);
    // What the earlier runtime wrote next: the move to EXECUTING, with a checkpoint whose journal says so.
    const runId = runIdFor(session.id, 0);
    const last = await store.latestCheckpoint(scope, runId);
    const taskId = last?.task_id ?? '';
    const task = await store.getTask(scope, taskId);
    expect(task?.state).toBe('CONFIRMING');
    await store.updateTask(scope, taskId, task?.version ?? 0, {
      state: 'EXECUTING',
      cause: 'confirmed',
    });
    const checkpointId = `ckpt_${'a'.repeat(26)}`;
    const journal = (last?.channels.journal ?? []) as JsonValue[];
    await store.putCheckpoint(scope, {
      id: checkpointId,
      run_id: runId,
      session_id: session.id,
      task_id: taskId,
      step: (last?.step ?? 0) + 1,
      parent_id: last?.id ?? null,
      label: 'executing',
      channels: {
        ...last?.channels,
        journal: [
          ...journal,
          // The confirming commit's result, then the commit of the move (its own result is never in its
          // checkpoint: a resumed run reads it back).
          {
            k: 'commit.result',
            v: { session: null, tasks: [task], actions: [], checkpoint_id: last?.id } as unknown as JsonValue,
          },
          {
            k: 'commit',
            v: { step: (last?.step ?? 0) + 1, label: 'executing', checkpoint_id: checkpointId },
          },
        ],
      },
    });
    const resumed = await resumeRun(runtimeOptions(store, scope, session.id, ledgerTools(ledger)));
    expect(resumed?.resumed).toBe(true);
    expect(comparable(resumed)).toEqual(comparable(reference));
    expect(readLedger(ledger)).toHaveLength(5);
    const events = await store.listTaskEvents(scope, taskId);
    expect(events.filter((e) => e.to_state === 'EXECUTING')).toHaveLength(1);
  });

  it('a crash at every commit of a turn resumes to the same output with no duplicate side effect', async () => {
    const scope = freshScope();
    const store = createMemoryStore();
    const refSession = await store.createSession(scope, { agent: 'deploy_pipeline' });
    const reference = await runTurn({
      ...runtimeOptions(store, scope, refSession.id, ledgerTools(join(temp.dir, 'ref2.jsonl'))),
      input: 'deploy web 2.0.1 to production',
    });
    // 12 commits: create, confirming, before and after steps 1-4, before step 5, and the final one (which
    // writes step 5's result).
    for (let at = 1; at <= 12; at++) {
      for (const when of ['before', 'after'] as const) {
        const ledger = join(temp.dir, `crash-${at}-${when}.jsonl`);
        const session = await store.createSession(scope, { agent: 'deploy_pipeline' });
        const first = runTurn({
          ...runtimeOptions(crashingStore(store, at, when), scope, session.id, ledgerTools(ledger)),
          input: 'deploy web 2.0.1 to production',
        });
        await expect(first).rejects.toThrow(SimulatedCrash);
        const options = runtimeOptions(store, scope, session.id, ledgerTools(ledger));
        let resumed = await resumeRun(options);
        // Before its first commit the run had stored nothing (its start checkpoint waits for that commit):
        // there is no run to resume, and the client's retry with the same input runs it.
        expect(resumed === null, `crash ${when} commit ${at}: no run`).toBe(at === 1 && when === 'before');
        resumed ??= await runTurn({ ...options, input: 'deploy web 2.0.1 to production' });
        expect(comparable(resumed), `crash ${when} commit ${at}`).toEqual(comparable(reference));
        expect(readLedger(ledger), `crash ${when} commit ${at}`).toHaveLength(5);
      }
    }
  });
});
