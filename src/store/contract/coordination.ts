/** Coordination: leases (who runs what) and request keys (HTTP Idempotency-Key). */
import type { JsonValue } from '../../core/json.js';
import type { Scope } from './common.js';

/** A time-limited claim of a named resource (for example: the right to run a session). */
export interface Lease {
  readonly name: string;
  readonly owner: string;
  readonly expires_at: string;
}

/** The answer kept for a request sent with an Idempotency-Key. */
export interface StoredResponse {
  readonly status: number;
  readonly body: JsonValue;
}

export type RequestKeyClaim =
  | { readonly state: 'new' }
  | { readonly state: 'in_progress' }
  | { readonly state: 'done'; readonly response: StoredResponse }
  | { readonly state: 'mismatch' };

/** Leases: a compare-and-swap claim with an expiry, so a dead owner never blocks forever. */
export interface LeaseCalls {
  /**
   * Takes the lease when it is free, expired or already ours; null when another owner holds it.
   * `ttl_ms` is 1..86 400 000 (24 hours).
   */
  acquireLease(scope: Scope, name: string, owner: string, ttl_ms: number): Promise<Lease | null>;
  /** Frees the lease if `owner` holds it. */
  releaseLease(scope: Scope, name: string, owner: string): Promise<boolean>;
}

/** Request idempotency (HTTP Idempotency-Key). */
export interface RequestKeyCalls {
  /**
   * Claims `key` for a request. It is kept `ttl_seconds` once completed; until then it expires after
   * `in_progress_ttl_seconds` (default: ttl_seconds), so a claim whose request died is not held for a day.
   * Both are 1..315 360 000 (10 years).
   */
  claimRequestKey(
    scope: Scope,
    key: string,
    request_hash: string,
    ttl_seconds: number,
    in_progress_ttl_seconds?: number,
  ): Promise<RequestKeyClaim>;
  /**
   * Keeps an unfinished claim alive: while `key` is in progress with `request_hash`, its in-progress expiry
   * becomes now + `in_progress_ttl_seconds` (1..315 360 000) and the answer is true. False, changing
   * nothing, when the key is not in progress with that hash any more (completed, released, expired and
   * perhaps claimed by another request, or never claimed): the caller has lost the claim. The holder of a
   * claim renews it while its request runs, so a claim whose holder died is free again after one short
   * in-progress TTL.
   */
  renewRequestKey(
    scope: Scope,
    key: string,
    request_hash: string,
    in_progress_ttl_seconds: number,
  ): Promise<boolean>;
  completeRequestKey(scope: Scope, key: string, response: StoredResponse): Promise<void>;
  releaseRequestKey(scope: Scope, key: string): Promise<void>;
}

export interface CoordinationCalls extends LeaseCalls, RequestKeyCalls {}
