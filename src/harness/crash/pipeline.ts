/**
 * One crash-child run of `deploy_pipeline` over a store: start or resume the session's turn, then read its
 * final output back (replies, task, actions, events, the release on disk) with every field that a correct
 * recovery must reproduce exactly.
 */
import { readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { createBuiltinAgents } from '../../agents/index.js';
import type { JsonValue } from '../../core/json.js';
import { createDemoTools } from '../../demo/tools.js';
import { createRulesModel } from '../../models/rules/index.js';
import { createModelRegistry } from '../../models/types.js';
import { type RuntimeOptions, resumeRun, runTurn, type TurnOutput } from '../../runtime/turn.js';
import type { Scope, StateStore } from '../../store/types.js';
import { watchStore } from './kill-store.js';
import { type CrashPoints, emit } from './points.js';

export const PIPELINE_AGENT = 'deploy_pipeline';
export const PIPELINE_INPUT = 'deploy checkout-api 1.4.2 to staging';

export interface PipelineRun {
  readonly store: StateStore;
  readonly scope: Scope;
  readonly sessionId: string;
  readonly workspaceDir: string;
  readonly leaseOwner?: string | undefined;
  readonly leaseTtlMs?: number | undefined;
  readonly points: CrashPoints;
}

function currentRelease(workspaceDir: string): string | null {
  try {
    return readlinkSync(join(workspaceDir, 'releases/checkout-api/staging/current'));
  } catch {
    return null;
  }
}

/** What the run ended with, without anything a recovery may legitimately change (ids are normalized later). */
async function finalOutput(run: PipelineRun, turn: TurnOutput): Promise<JsonValue> {
  const { store, scope, sessionId } = run;
  const messages = await store.listMessages(scope, sessionId, { limit: 1000 });
  const tasks = [];
  for (const task of turn.tasks) {
    const events = await store.listTaskEvents(scope, task.id);
    const actions = await store.listActions(scope, { task_id: task.id, limit: 500 });
    tasks.push({
      id: task.id,
      type: task.type,
      state: task.state,
      slots: task.slots,
      status_line: task.status_line,
      transitions: events.map((e) => `${e.from_state ?? 'none'}->${e.to_state}`),
      actions: actions.items.map((a) => ({
        tool: a.tool,
        status: a.status,
        params: a.params,
        result: a.result,
      })),
    });
  }
  return {
    reply: turn.reply,
    messages: messages.map((m) => ({ role: m.role, content: m.content })),
    tasks,
    release: currentRelease(run.workspaceDir),
  } as unknown as JsonValue;
}

export async function runPipeline(run: PipelineRun): Promise<JsonValue> {
  // a resumed run reports its time to resume at its first new write (so a run killed later still reports),
  // or when resumeRun returns having nothing left to write
  let resumeStarted: number | null = null;
  let reported = false;
  const report = (replayed: boolean) => {
    if (resumeStarted === null || reported) return;
    reported = true;
    emit({ event: 'resumed', ms: performance.now() - resumeStarted, replayed });
  };
  const watched = watchStore(run.store, run.points, () => report(true));
  const options: RuntimeOptions = {
    store: watched.store,
    scope: run.scope,
    sessionId: run.sessionId,
    agents: createBuiltinAgents(),
    models: createModelRegistry([createRulesModel()]),
    tools: createDemoTools({ workspaceDir: run.workspaceDir, hooks: run.points.toolHooks() }),
    agent: PIPELINE_AGENT,
    lease: {
      ...(run.leaseOwner === undefined ? {} : { owner: run.leaseOwner }),
      ...(run.leaseTtlMs === undefined ? {} : { ttlMs: run.leaseTtlMs }),
    },
  };
  const existing = await run.store.getSession(run.scope, run.sessionId);
  let turn: TurnOutput | null = null;
  if (existing === null) {
    await watched.store.createSession(run.scope, { id: run.sessionId, agent: PIPELINE_AGENT });
  } else {
    resumeStarted = performance.now();
    turn = await resumeRun(options);
    report(turn?.resumed ?? false);
  }
  turn ??= await runTurn({ ...options, input: PIPELINE_INPUT });
  return finalOutput(run, turn);
}
