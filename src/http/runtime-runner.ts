/**
 * The agent runtime behind the HTTP routes: `runTurn` for `POST .../turns`, `resumeRun` for
 * `POST .../resume`, and a session's checkpoints gathered from the runs its messages name.
 * A second turn of a session while one runs gets the runtime's lease `conflict` (HTTP 409).
 */
import { AgentStateError } from '../core/errors.js';
import type { Checkpoint, Session } from '../core/model.js';
import type { RuntimeOptions, TurnOutput } from '../runtime/turn.js';
import { resumeRun, runIdFor, runTurn } from '../runtime/turn.js';
import type { Page, ReadScope, Scope, StateStore } from '../store/types.js';
import type { TurnResponse, TurnRunner } from './turn-runner.js';

/** Everything of RuntimeOptions that does not change per request. */
export type RuntimeSetup = Omit<RuntimeOptions, 'store' | 'scope' | 'sessionId'>;

/** How many recent messages are read to find a session's runs for its checkpoint history. */
const RUN_SCAN_MESSAGES = 200;

function response(output: TurnOutput): TurnResponse {
  return { ...output };
}

async function runIdsOf(store: StateStore, scope: ReadScope, session: Session): Promise<string[]> {
  const messages = await store.lastMessages(scope, session.id, RUN_SCAN_MESSAGES);
  const ids = new Set<string>();
  const last = messages.at(-1);
  ids.add(runIdFor(session.id, last?.seq ?? 0));
  for (const message of messages) {
    const run = message.metadata.run_id;
    if (typeof run === 'string') ids.add(run);
  }
  return [...ids];
}

export function createRuntimeTurnRunner(store: StateStore, setup: RuntimeSetup): TurnRunner {
  const optionsFor = (scope: Scope, session: Session): RuntimeOptions => ({
    ...setup,
    store,
    scope,
    sessionId: session.id,
  });
  return {
    agentNames: () => setup.agents.names(),
    async runTurn(scope, session, input) {
      return response(await runTurn({ ...optionsFor(scope, session), input }));
    },
    async resume(scope, session) {
      const output = await resumeRun(optionsFor(scope, session));
      if (output === null) {
        throw new AgentStateError(
          'conflict',
          `session ${session.id} has no run to resume: send a turn first`,
          {
            details: { session_id: session.id },
          },
        );
      }
      return response(output);
    },
    async checkpoints(scope, session, limit, before): Promise<Page<Checkpoint>> {
      const all: Checkpoint[] = [];
      for (const runId of await runIdsOf(store, scope, session)) {
        all.push(...(await store.listCheckpoints(scope, runId, { limit: 500 })).items);
      }
      all.sort((a, b) =>
        a.created_at === b.created_at ? b.step - a.step : a.created_at < b.created_at ? 1 : -1,
      );
      const found = before === null ? -1 : all.findIndex((c) => c.id === before);
      if (before !== null && found < 0) return { items: [], next_cursor: null };
      const start = found + 1;
      const items = all.slice(start, start + limit);
      const last = items.at(-1);
      return { items, next_cursor: start + limit < all.length && last ? last.id : null };
    },
  };
}
