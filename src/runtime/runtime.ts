/**
 * A runtime bound to its store and registries, for servers and CLIs: `turn(scope, sessionId, input)` and
 * `resume(scope, sessionId)`. Options are read once and never mutated; defaults are documented per field.
 * Turns of different sessions in flight at once go on oldest first (turn-scheduler.ts).
 */
import type { Clock } from '../core/clock.js';
import { createRulesModel } from '../models/rules/index.js';
import { createModelRegistry, type ModelRegistry } from '../models/types.js';
import type { Scope, StateStore } from '../store/types.js';
import type { RetryPolicy } from './actions.js';
import type { AgentRegistry } from './agent.js';
import type { ContextOptions } from './compaction.js';
import type { ToolRegistry } from './tool.js';
import { type RuntimeOptions, resumeRun, runTurn, type TurnOutput } from './turn.js';
import { TurnScheduler } from './turn-scheduler.js';

export interface AgentRuntimeOptions {
  readonly store: StateStore;
  readonly agents: AgentRegistry;
  readonly tools: ToolRegistry;
  /** Default: a registry holding the `rules` model only. */
  readonly models?: ModelRegistry;
  /** Default 'rules'. */
  readonly model?: string;
  /** Default: the system clock. */
  readonly clock?: Clock;
  /** Default 'UTC' (a session's context.timezone wins). */
  readonly timezone?: string;
  readonly retry?: Partial<RetryPolicy>;
  readonly lease?: { readonly owner?: string; readonly ttlMs?: number; readonly waitMs?: number };
  /** The conversation built for models that use one (default 4000 tokens), compaction after each turn. */
  readonly context?: ContextOptions;
  /** Checkpoints kept of a completed run. Default 20; `false` keeps them all. */
  readonly keepCheckpoints?: number | false;
  /** How long a run's start checkpoint waits to ride in its first write (ms). Default 50. */
  readonly checkpointDeferMs?: number;
  /** How often, at most, a run reads the store for a cancel asked from another process (ms). Default 250. */
  readonly cancelCheckMs?: number;
}

export interface AgentRuntime {
  turn(scope: Scope, sessionId: string, input: string, agent?: string): Promise<TurnOutput>;
  /** Continues an interrupted run; the last finished run's output when none is interrupted; null when none ran. */
  resume(scope: Scope, sessionId: string): Promise<TurnOutput | null>;
}

export function createAgentRuntime(options: AgentRuntimeOptions): AgentRuntime {
  const models = options.models ?? createModelRegistry([createRulesModel()]);
  const scheduler = new TurnScheduler();
  const base = (store: StateStore, scope: Scope, sessionId: string): RuntimeOptions => ({
    store,
    scope,
    sessionId,
    agents: options.agents,
    models,
    tools: options.tools,
    ...(options.clock === undefined ? {} : { clock: options.clock }),
    ...(options.model === undefined ? {} : { model: options.model }),
    ...(options.timezone === undefined ? {} : { timezone: options.timezone }),
    ...(options.retry === undefined ? {} : { retry: options.retry }),
    ...(options.lease === undefined ? {} : { lease: options.lease }),
    ...(options.context === undefined ? {} : { context: options.context }),
    ...(options.keepCheckpoints === undefined ? {} : { keepCheckpoints: options.keepCheckpoints }),
    ...(options.checkpointDeferMs === undefined ? {} : { checkpointDeferMs: options.checkpointDeferMs }),
    ...(options.cancelCheckMs === undefined ? {} : { cancelCheckMs: options.cancelCheckMs }),
  });
  return {
    turn: (scope, sessionId, input, agent) =>
      scheduler.run(options.store, (store) =>
        runTurn({ ...base(store, scope, sessionId), input, ...(agent === undefined ? {} : { agent }) }),
      ),
    resume: (scope, sessionId) =>
      scheduler.run(options.store, (store) => resumeRun(base(store, scope, sessionId))),
  };
}
