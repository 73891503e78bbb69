/** What every core operation works with: the checks, the time of the call, randomness and the driver. */
import type { Clock, RandomSource } from '../../core/clock.js';
import { AgentStateError } from '../../core/errors.js';
import type { Checks } from './checks.js';
import type { DriverReads, DriverTx } from './driver.js';

/** The store's settings, fixed when it is made. */
export interface CoreEnv {
  readonly adapter: string;
  readonly v: Checks;
  readonly clock: Clock;
  readonly random: RandomSource;
  readonly defaultTtlSeconds: number;
  /** How long a run's events are kept after its last one (StoreOptions.runEventTtlSeconds). */
  readonly runEventTtlSeconds: number;
  /** The key that seals list cursors (shared/sealed-cursor.ts): read from the driver on first use. */
  cursorKey(): Promise<Buffer>;
}

/** One call: the environment, the call's instant (ms) and the driver's view. */
export interface Op<T extends DriverReads = DriverReads> {
  readonly env: CoreEnv;
  readonly now: number;
  readonly tx: T;
}

export type WriteOp = Op<DriverTx>;

export function notFound(env: CoreEnv, kind: string, id: string): AgentStateError {
  return new AgentStateError('not_found', `[${env.adapter}] ${kind} ${id} not found`, {
    details: { kind, id },
  });
}

export function conflict(env: CoreEnv, kind: string, id: string): AgentStateError {
  return new AgentStateError('conflict', `[${env.adapter}] ${kind} ${id} already exists`, {
    details: { id },
  });
}
