/**
 * Errors of the tiered store. Every error starts with `[tiered]`: an inner adapter's `[redis] ` or
 * `[postgres] ` prefix is replaced (its code, details and cause are kept); a `store_unavailable` also
 * names the tier that failed (`[tiered] redis: store unavailable: ...`).
 */
import { AgentStateError } from '../../core/errors.js';
import { mapError as mapRedisError } from '../redis/client.js';

export const ADAPTER = 'tiered';

export type Tier = 'redis' | 'postgres';

const INNER_PREFIX = /^\[(redis|postgres)\] /;

/** The same error under the tiered store's name. Non-AgentStateErrors come from our own Redis calls. */
export function rebrand(error: unknown, tier: Tier): AgentStateError {
  const inner = error instanceof AgentStateError ? error : mapRedisError(error);
  if (inner.message.startsWith(`[${ADAPTER}]`)) return inner;
  const rest = inner.message.replace(INNER_PREFIX, '');
  const message =
    inner.code === 'store_unavailable' ? `[${ADAPTER}] ${tier}: ${rest}` : `[${ADAPTER}] ${rest}`;
  return new AgentStateError(inner.code, message, {
    cause: inner.cause ?? inner,
    ...(inner.details === undefined ? {} : { details: inner.details }),
  });
}

/**
 * A turn whose durable part (tasks, actions, checkpoint) committed in PostgreSQL but whose Redis part
 * (session patch, messages) could not be written. The task state is right; the reply can be regenerated.
 */
export function durableCommitted(error: unknown): AgentStateError {
  const reason = error instanceof Error ? error.message : String(error);
  return new AgentStateError(
    'store_unavailable',
    `[${ADAPTER}] the turn's tasks, actions and checkpoint are committed, but its session part was not written: ${reason}`,
    { cause: error, details: { durable_committed: true } },
  );
}
