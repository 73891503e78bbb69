/**
 * The durable commit of a turn that carries run events. A run's events live in PostgreSQL, where the run's
 * state lives (its tasks, actions and checkpoints, written by the turn's durable commit), and the events of
 * a turn are written by that same PostgreSQL transaction, so none lands without the records it tells of
 * and none is written when the durable part fails. Its `final` event (and the `message.created` events)
 * must see the session and messages the Redis half writes after that commit: turn.ts prepares the Redis
 * half before the commit, pinned (one instant, the message ids drawn once, the session's turn lock held
 * so no other call appends or changes its version), hands the result here, and writes exactly it after.
 *
 * The events are built the store core's way (core/turn.ts: items, one event per record in the batch's
 * order, then final), but from the whole turn: PostgreSQL's public commitTurn only sees its own records,
 * so this runs the core's turn in a transaction of the PostgreSQL store's driver itself.
 */
import { AgentStateError, storeUnavailable } from '../../core/errors.js';
import type { CoreEnv } from '../core/context.js';
import type { StoreDriver } from '../core/driver.js';
import { appendEvents, type CheckedTurnEvents, checkEvent, eventsOfTurn } from '../core/events.js';
import { type CheckedBatch, commitTurn } from '../core/turn.js';
import { SqlCoreStore } from '../sql/core-store.js';
import type { Scope, StateStore, TurnResult } from '../types.js';

/** Reads the driver the PostgreSQL store core runs on (a protected member of the store core). */
class DriverOf extends SqlCoreStore {
  static of(store: SqlCoreStore): StoreDriver {
    return (store as DriverOf).driver;
  }
}

/** The driver under the durable tier (a SqlCoreStore, as openPostgresStore makes it). */
export function durableDriver(pg: StateStore): StoreDriver {
  if (!(pg instanceof SqlCoreStore)) {
    throw new AgentStateError('internal', '[tiered] the durable tier is not a PostgreSQL store');
  }
  return DriverOf.of(pg);
}

/** What the Redis half of the turn writes (as prepared before the durable commit). */
export interface RedisWrites {
  readonly session: TurnResult['session'];
  readonly messages: TurnResult['messages'];
}

/**
 * Commits the durable part of `b` (its session patch, messages and lease release left out) and the run's
 * events of the whole turn in one PostgreSQL transaction, at `now`. Returns the durable part's result.
 */
export async function commitDurableWithEvents(
  driver: StoreDriver,
  env: CoreEnv,
  scope: Scope,
  b: CheckedBatch,
  events: CheckedTurnEvents,
  redis: RedisWrites,
  now: number,
): Promise<TurnResult> {
  const durable: CheckedBatch = { ...b, session: null, messages: null, release: null, events: null };
  try {
    return await driver.transaction(async (tx) => {
      const op = { env, tx, now };
      const result = await commitTurn(op, scope, durable, driver.listsAfterCommit !== true);
      const whole: TurnResult = { ...result, session: redis.session, messages: redis.messages };
      const last =
        events.final === null ? [] : [checkEvent(env, events.final(whole), 'batch.events.final()')];
      const written = [...events.items, ...eventsOfTurn(whole), ...last];
      await appendEvents(op, scope, events.session_id, events.run_id, written);
      return result;
    });
  } catch (error) {
    if (error instanceof AgentStateError) throw error;
    throw storeUnavailable('postgres', error);
  }
}
