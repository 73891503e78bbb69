/** What every call of the contract shares: who asks, pages, the store's capabilities and options. */
import type { Clock, RandomSource } from '../../core/clock.js';

/** Who is asking: every record belongs to one tenant and one user. */
export interface Scope {
  readonly tenant_id: string;
  readonly user_id: string;
}

/**
 * A read scope: a user's records, or, with `user_id` absent, all of one tenant's records (a tenant key).
 * There is no read without a tenant.
 */
export interface ReadScope {
  readonly tenant_id: string;
  readonly user_id?: string;
}

export interface Page<T> {
  readonly items: T[];
  /** Pass back as `cursor` for the next page; null when there is none. */
  readonly next_cursor: string | null;
}

export interface PageQuery {
  /** 1..500; default 50 when absent (null is refused, like any other non-number). */
  readonly limit?: number;
  readonly cursor?: string | null;
}

export interface StoreCapabilities {
  /** Several OS processes may share the store (false for memory:). */
  readonly multiProcess: boolean;
  /** Data survives the process (false for memory:). */
  readonly durable: boolean;
  /**
   * True when one transaction writes the rows of one user only (Redis: a script runs in one cluster slot).
   * A turn's `other_memory` is then written apart from the rest of its batch: its puts before it, its
   * deletes after it (so a batch that fails after its puts leaves them). Absent: in the same transaction.
   */
  readonly oneUserPerTransaction?: boolean;
}

/** Options every adapter takes. One object, a documented default per field; never mutated. */
export interface StoreOptions {
  /** The source of time. Default: the system clock. */
  readonly clock?: Clock;
  /** The source of random bytes for ids. Default: node:crypto. */
  readonly random?: RandomSource;
  /** Session TTL when a session names none. Default 1800 (30 minutes). */
  readonly defaultSessionTtlSeconds?: number;
  /** How long a run's events are kept after its last one, in seconds. Default 3600 (one hour). */
  readonly runEventTtlSeconds?: number;
}

export const DEFAULT_SESSION_TTL_SECONDS = 1800;
export const DEFAULT_PAGE_LIMIT = 50;
export const MAX_PAGE_LIMIT = 500;
