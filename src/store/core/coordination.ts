/** Leases (compare-and-swap claims with an expiry) and request keys (HTTP Idempotency-Key). */
import { isoAt } from '../../core/clock.js';
import { AgentStateError } from '../../core/errors.js';
import type { Lease, RequestKeyClaim, Scope, StoredResponse } from '../types.js';
import type { CoreEnv, WriteOp } from './context.js';

export async function acquireLease(
  op: WriteOp,
  scope: Scope,
  name: string,
  owner: string,
  ttl_ms: number,
): Promise<Lease | null> {
  const expires_ms = op.now + ttl_ms;
  const taken = { name, owner, expires_at: isoAt(expires_ms) };
  // Most leases are free (a run's last commit frees its session's): take it with one insert, then read.
  if (await op.tx.putLease(scope, name, { owner, expires_ms }, null)) return taken;
  const held = await op.tx.getLease(scope, name);
  if (held !== null && held.owner !== owner && held.expires_ms > op.now) return null;
  if (!(await op.tx.putLease(scope, name, { owner, expires_ms }, held))) return null;
  return taken;
}

/** `granted`: the expiry the owner says it holds; freed without a read when the lease still has it. */
export async function releaseLease(
  op: WriteOp,
  scope: Scope,
  name: string,
  owner: string,
  granted?: number,
): Promise<boolean> {
  if (granted !== undefined && granted > op.now) {
    if (await op.tx.deleteLease(scope, name, { owner, expires_ms: granted })) return true;
  }
  const held = await op.tx.getLease(scope, name);
  if (held === null || held.owner !== owner || held.expires_ms <= op.now) return false;
  return op.tx.deleteLease(scope, name, held);
}

export async function claimRequestKey(
  op: WriteOp,
  scope: Scope,
  key: string,
  request_hash: string,
  ttl_seconds: number,
  in_progress_ttl_seconds: number,
): Promise<RequestKeyClaim> {
  const held = await op.tx.getRequestKey(scope, key);
  if (held === null || held.expires_ms <= op.now) {
    const next = {
      request_hash,
      ttl_seconds,
      expires_ms: op.now + in_progress_ttl_seconds * 1000,
      response: null,
    };
    if (await op.tx.putRequestKey(scope, key, next, held)) return { state: 'new' };
    return { state: 'in_progress' };
  }
  if (held.request_hash !== request_hash) return { state: 'mismatch' };
  if (held.response === null) return { state: 'in_progress' };
  return { state: 'done', response: held.response };
}

/**
 * Extends an unfinished claim to now + `in_progress_ttl_seconds` while it still has `request_hash`; false
 * when it does not any more (completed, released, expired, taken by another, or never claimed).
 */
export async function renewRequestKey(
  op: WriteOp,
  scope: Scope,
  key: string,
  request_hash: string,
  in_progress_ttl_seconds: number,
): Promise<boolean> {
  const held = await op.tx.getRequestKey(scope, key);
  if (held === null || held.expires_ms <= op.now) return false;
  if (held.request_hash !== request_hash || held.response !== null) return false;
  const next = { ...held, expires_ms: op.now + in_progress_ttl_seconds * 1000 };
  return op.tx.putRequestKey(scope, key, next, held);
}

export function checkResponse(env: CoreEnv, response: StoredResponse): StoredResponse {
  const { v } = env;
  v.record(response, 'response');
  const status = response.status;
  if (typeof status !== 'number' || !Number.isInteger(status) || status < 100 || status > 599) {
    v.fail(`response.status must be an HTTP status from 100 to 599, got ${String(status)}`);
  }
  return { status, body: v.json(response.body, 'response.body') };
}

export async function completeRequestKey(
  op: WriteOp,
  scope: Scope,
  key: string,
  response: StoredResponse,
): Promise<void> {
  const held = await op.tx.getRequestKey(scope, key);
  if (held === null || held.expires_ms <= op.now) {
    throw new AgentStateError(
      'not_found',
      `[${op.env.adapter}] request key ${JSON.stringify(key)} not found`,
    );
  }
  const next = { ...held, expires_ms: op.now + held.ttl_seconds * 1000, response };
  if (!(await op.tx.putRequestKey(scope, key, next, held))) {
    throw new AgentStateError(
      'not_found',
      `[${op.env.adapter}] request key ${JSON.stringify(key)} not found`,
    );
  }
}
