/** Shared test setup: a store (memory: or a SQLite file in a temp dir), registries, a scope. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createBuiltinAgents } from '../../src/agents/index.js';
import { ManualClock } from '../../src/core/clock.js';
import { newId } from '../../src/core/ids.js';
import { createRulesModel } from '../../src/models/rules/index.js';
import { createModelRegistry } from '../../src/models/types.js';
import type { ToolRegistry } from '../../src/runtime/tool.js';
import type { RuntimeOptions } from '../../src/runtime/turn.js';
import type { Scope, StateStore } from '../../src/store/types.js';

export function tempDir(): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'agentstate-runtime-'));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

export function freshScope(): Scope {
  return { tenant_id: `t_${newId('run').slice(4, 14)}`, user_id: `u_${newId('run').slice(4, 14)}` };
}

/** 2026-12-01T20:00Z is Wednesday 2026-12-02, 04:00 in Asia/Shanghai. */
export const START = '2026-12-01T20:00:00.000Z';

export function runtimeOptions(
  store: StateStore,
  scope: Scope,
  sessionId: string,
  tools: ToolRegistry,
  clock = new ManualClock(START),
): RuntimeOptions {
  return {
    store,
    scope,
    sessionId,
    agents: createBuiltinAgents(),
    models: createModelRegistry([createRulesModel()]),
    tools,
    clock,
    retry: { baseDelayMs: 1, maxDelayMs: 5, timeoutMs: 2_000 },
  };
}
