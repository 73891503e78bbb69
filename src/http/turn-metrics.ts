/**
 * `agentstate_turns_total` and `agentstate_turn_duration_seconds`, by agent and outcome, around every turn
 * the HTTP API runs. The outcome is `ok` or the AgentStateError code the turn failed with (`error` for
 * anything else), so the label set stays small. The agent is the session's (`default` when it names none).
 */
import { AgentStateError } from '../core/errors.js';
import type { AgentStateMetrics } from '../observability/metrics.js';
import type { TurnRunner } from './turn-runner.js';

function outcomeOf(error: unknown): string {
  return error instanceof AgentStateError ? error.code : 'error';
}

/** The same runner, with each `runTurn` counted and timed. */
export function meteredTurns(runner: TurnRunner, metrics: AgentStateMetrics): TurnRunner {
  const metered: TurnRunner = Object.create(runner) as TurnRunner;
  metered.runTurn = async (scope, session, input) => {
    const agent = session.agent ?? 'default';
    const started = performance.now();
    let outcome = 'ok';
    try {
      return await runner.runTurn(scope, session, input);
    } catch (error) {
      outcome = outcomeOf(error);
      throw error;
    } finally {
      const labels = { agent, outcome };
      metrics.turns.inc(labels);
      metrics.turnDuration.observe(labels, (performance.now() - started) / 1000);
    }
  };
  return metered;
}
