/**
 * One crash-child run of `deploy_pipeline` over a store: start or resume the session's turn, then read its
 * final output back (messages, tasks with their events and actions, the run's checkpoints, every file the
 * deploy wrote) with every field that a correct recovery must reproduce exactly.
 */
import { createBuiltinAgents } from '../../agents/index.js';
import type { JsonValue } from '../../core/json.js';
import { createDemoTools } from '../../demo/tools.js';
import { createRulesModel } from '../../models/rules/index.js';
import { createModelRegistry } from '../../models/types.js';
import { type RuntimeOptions, resumeRun, runTurn, type TurnOutput } from '../../runtime/turn.js';
import type { Scope, StateStore } from '../../store/types.js';
import { watchStore } from './kill-store.js';
import { type ActionKey, type CrashPoints, emit } from './points.js';
import { workspaceFiles } from './workspace-files.js';

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

/** What a resumed run must reproduce exactly: everything a user can see, ids aside (normalized later). */
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
      data: task.data,
      version: task.version,
      events: events.map((e) => ({
        from: e.from_state,
        to: e.to_state,
        cause: e.cause,
        task_version: e.task_version,
      })),
      actions: actions.items.map((a) => ({
        type: a.type,
        tool: a.tool,
        status: a.status,
        params: a.params,
        result: a.result,
        error: a.error,
        attempts: a.attempts,
        note: a.note,
      })),
    });
  }
  const checkpoints = await store.listCheckpoints(scope, turn.run_id, { limit: 500 });
  return {
    reply: turn.reply,
    messages: messages.map((m) => ({
      seq: m.seq,
      role: m.role,
      content: m.content,
      name: m.name,
      tool_calls: m.tool_calls,
      tool_call_id: m.tool_call_id,
      metadata: m.metadata,
    })),
    tasks,
    checkpoints: checkpoints.items
      .map((c) => ({ step: c.step, label: c.label, task_id: c.task_id, parent: c.parent_id !== null }))
      .sort((a, b) => a.step - b.step),
    files: workspaceFiles(run.workspaceDir),
  } as unknown as JsonValue;
}

/** The idempotency key of every action of the run's tasks, to match against the downstream's effect log. */
async function actionKeys(run: PipelineRun, turn: TurnOutput): Promise<ActionKey[]> {
  const keys: ActionKey[] = [];
  for (const task of turn.tasks) {
    const actions = await run.store.listActions(run.scope, { task_id: task.id, limit: 500 });
    for (const a of actions.items) keys.push({ tool: a.tool, key: a.idempotency_key, status: a.status });
  }
  return keys;
}

export interface PipelineResult {
  readonly output: JsonValue;
  readonly keys: ActionKey[];
}

export async function runPipeline(run: PipelineRun): Promise<PipelineResult> {
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
    await run.store.createSession(run.scope, { id: run.sessionId, agent: PIPELINE_AGENT });
  } else {
    resumeStarted = performance.now();
    turn = await resumeRun(options);
    report(turn?.resumed ?? false);
  }
  turn ??= await runTurn({ ...options, input: PIPELINE_INPUT });
  return { output: await finalOutput(run, turn), keys: await actionKeys(run, turn) };
}
