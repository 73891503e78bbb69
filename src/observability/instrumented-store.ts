/**
 * Wraps any StateStore so that every adapter reports the same metrics without knowing about them:
 * version conflicts, store errors, checkpoint write latency, sessions created and expired, action statuses.
 */
import { isAgentStateError } from '../core/errors.js';
import type { Action, Session } from '../core/model.js';
import type { StateStore, TurnBatch, TurnResult } from '../store/types.js';
import type { AgentStateMetrics } from './metrics.js';

const INPUT_ERRORS = new Set([
  'invalid_request',
  'version_conflict',
  'conflict',
  'not_found',
  'illegal_transition',
]);

type AnyMethod = (...args: unknown[]) => Promise<unknown>;

function recordSuccess(metrics: AgentStateMetrics, method: string, result: unknown): void {
  switch (method) {
    case 'createSession':
      metrics.sessionsCreated.inc({ agent: (result as Session).agent ?? 'none' });
      break;
    case 'beginAction': {
      const begun = result as { created: boolean };
      if (begun.created) metrics.actions.inc({ status: 'PENDING' });
      break;
    }
    case 'completeAction':
    case 'markActionUnknown':
    case 'resolveAction':
      metrics.actions.inc({ status: (result as Action).status });
      break;
    case 'commitTurn':
      for (const action of (result as TurnResult).actions) metrics.actions.inc({ status: action.status });
      break;
    case 'sweepExpired':
      metrics.sessionsExpired.inc(result as number);
      metrics.sweeperDeleted.inc(result as number);
      break;
  }
}

function recordFailure(metrics: AgentStateMetrics, adapter: string, method: string, error: unknown): void {
  if (isAgentStateError(error, 'version_conflict')) {
    const kind = (error.details?.kind as string | undefined) ?? method;
    metrics.versionConflicts.inc({ kind });
    return;
  }
  if (isAgentStateError(error) && INPUT_ERRORS.has(error.code)) return;
  const code = isAgentStateError(error) ? error.code : 'internal';
  metrics.storeErrors.inc({ adapter, code });
}

export function instrumentStore(store: StateStore, metrics: AgentStateMetrics): StateStore {
  return new Proxy(store, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== 'function' || typeof property !== 'string') return value;
      const method = value as AnyMethod;
      return async (...args: unknown[]) => {
        // Every write of a checkpoint: alone, or with a turn's commit (a run's commits all carry one).
        const writesCheckpoint =
          property === 'putCheckpoint' ||
          (property === 'commitTurn' && (args[1] as TurnBatch | undefined)?.checkpoint !== undefined);
        const timer = writesCheckpoint ? process.hrtime.bigint() : undefined;
        try {
          const result = await method.apply(target, args);
          if (timer !== undefined) {
            const seconds = Number(process.hrtime.bigint() - timer) / 1e9;
            metrics.checkpointWriteDuration.observe({ adapter: target.adapter }, seconds);
          }
          recordSuccess(metrics, property, result);
          return result;
        } catch (error) {
          recordFailure(metrics, target.adapter, property, error);
          throw error;
        }
      };
    },
  });
}
