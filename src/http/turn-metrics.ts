/**
 * `agentstate_turns_total` and `agentstate_turn_duration_seconds`, by agent, model and outcome, around every
 * turn the HTTP API runs. The outcome is `ok` or the AgentStateError code the turn failed with (`error` for
 * anything else), so the label set stays small. The agent is the session's (`default` when it names none)
 * and the model the one its turns run with: a turn asked for by session id alone takes them from its
 * answer, or after a failure from the session read then (`unknown` when there is none to read). When the
 * turn is traced, its duration carries an exemplar with the trace id (OpenMetrics answers of `/metrics`).
 */
import { AgentStateError } from '../core/errors.js';
import type { Session } from '../core/model.js';
import type { AgentStateMetrics } from '../observability/metrics.js';
import { traceExemplar } from '../observability/tracing.js';
import type { SessionRef, TurnRunner } from '../server/turn-runner.js';
import type { StateStore } from '../store/types.js';

function outcomeOf(error: unknown): string {
  return error instanceof AgentStateError ? error.code : 'error';
}

/** The same runner, with each `runTurn` counted and timed. */
export function meteredTurns(runner: TurnRunner, metrics: AgentStateMetrics, store: StateStore): TurnRunner {
  const metered: TurnRunner = Object.create(runner) as TurnRunner;
  const modelOf = (session: Session) => runner.modelFor?.(session) ?? 'unknown';
  metered.runTurn = async (scope, session, input, call) => {
    const given = session as SessionRef & Partial<Session>;
    let agent = given.agent === undefined ? undefined : (given.agent ?? 'default');
    let model = given.context === undefined ? undefined : modelOf(given as Session);
    const started = performance.now();
    let outcome = 'ok';
    try {
      const answer = await runner.runTurn(scope, session, input, call);
      agent ??= answer.session?.agent ?? 'default';
      model = answer.model ?? model;
      return answer;
    } catch (error) {
      outcome = outcomeOf(error);
      if (agent === undefined || model === undefined) {
        const read = await store.getSession(scope, session.id).catch(() => null);
        agent ??= read === null ? 'unknown' : (read.agent ?? 'default');
        model ??= read === null ? 'unknown' : modelOf(read);
      }
      throw error;
    } finally {
      const labels = { agent: agent ?? 'unknown', model: model ?? 'unknown', outcome };
      metrics.turns.inc(labels);
      // The exemplar names the trace the turn ran in (when traced), for Grafana to link to it.
      const value = (performance.now() - started) / 1000;
      metrics.turnDuration.observe({ labels, value, exemplarLabels: traceExemplar() });
    }
  };
  return metered;
}
