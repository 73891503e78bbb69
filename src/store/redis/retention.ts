/**
 * Retention on the Redis store: not implemented yet. Tasks, actions and checkpoints of the plain Redis store
 * have no index by age, so a sweep would walk every record; the tiered store keeps them in PostgreSQL, where
 * sweepRetention works. The call fails loudly (never a sweep that silently deletes nothing).
 */
import { AgentStateError } from '../../core/errors.js';
import { checkRetention } from '../shared/retention.js';
import type { RetentionCutoffs, RetentionSweep } from '../types.js';
import type { Ctx } from './plan.js';

export async function sweepRetention(
  _ctx: Ctx,
  cutoffs: RetentionCutoffs,
  limit: number,
): Promise<RetentionSweep> {
  checkRetention('redis', cutoffs, limit);
  throw new AgentStateError(
    'internal',
    '[redis] sweepRetention is not supported by the redis store yet: use the tiered store for retention',
  );
}
