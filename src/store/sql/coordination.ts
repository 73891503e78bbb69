/** Leases (compare-and-swap claims with an expiry) and HTTP Idempotency-Key records, one upsert each. */
import { isoAt } from '../../core/clock.js';
import type { Lease, RequestKeyClaim, Scope, StoredResponse } from '../types.js';
import { isoAfter, notFound, nowIso, type SqlContext } from './context.js';
import type { SqlExecutor } from './executor.js';

/** Takes the lease when free, expired or already ours: an upsert whose update applies only in those cases. */
export async function acquireLeaseRow(
  ctx: SqlContext,
  q: SqlExecutor,
  scope: Scope,
  name: string,
  owner: string,
  ttl_ms: number,
): Promise<Lease | null> {
  const expires_at = isoAt(ctx.clock.now() + ttl_ms);
  const changed = await q.run(
    `INSERT INTO leases (tenant_id, user_id, name, owner, expires_at) VALUES (?, ?, ?, ?, ?)
      ON CONFLICT (tenant_id, user_id, name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
      WHERE leases.owner = excluded.owner OR leases.expires_at <= ?`,
    [scope.tenant_id, scope.user_id, name, owner, expires_at, nowIso(ctx)],
  );
  return changed === 0 ? null : { name, owner, expires_at };
}

export async function releaseLeaseRow(
  ctx: SqlContext,
  q: SqlExecutor,
  scope: Scope,
  name: string,
  owner: string,
) {
  const changed = await q.run(
    'DELETE FROM leases WHERE tenant_id = ? AND user_id = ? AND name = ? AND owner = ? AND expires_at > ?',
    [scope.tenant_id, scope.user_id, name, owner, nowIso(ctx)],
  );
  return changed > 0;
}

/** Claims a request key: a new (or expired) key is taken by one upsert; otherwise the stored claim answers. */
export async function claimRequestKeyRow(
  ctx: SqlContext,
  q: SqlExecutor,
  scope: Scope,
  key: string,
  request_hash: string,
  ttl_seconds: number,
  in_progress_ttl_seconds: number,
): Promise<RequestKeyClaim> {
  const now = nowIso(ctx);
  const taken = await q.run(
    `INSERT INTO request_keys (tenant_id, user_id, key, request_hash, state, response, ttl_seconds, expires_at)
      VALUES (?, ?, ?, ?, 'in_progress', NULL, ?, ?)
      ON CONFLICT (tenant_id, user_id, key) DO UPDATE SET request_hash = excluded.request_hash,
      state = excluded.state, response = NULL, ttl_seconds = excluded.ttl_seconds, expires_at = excluded.expires_at
      WHERE request_keys.expires_at <= ?`,
    [
      scope.tenant_id,
      scope.user_id,
      key,
      request_hash,
      ttl_seconds,
      isoAfter(ctx, in_progress_ttl_seconds * 1000),
      now,
    ],
  );
  if (taken > 0) return { state: 'new' };
  const row = await q.get(
    'SELECT request_hash, state, response FROM request_keys WHERE tenant_id = ? AND user_id = ? AND key = ?',
    [scope.tenant_id, scope.user_id, key],
  );
  // Released between the upsert and the read: try again.
  if (row === undefined)
    return claimRequestKeyRow(ctx, q, scope, key, request_hash, ttl_seconds, in_progress_ttl_seconds);
  if (String(row.request_hash) !== request_hash) return { state: 'mismatch' };
  if (String(row.state) !== 'done') return { state: 'in_progress' };
  return { state: 'done', response: JSON.parse(String(row.response)) as StoredResponse };
}

/** Keeps the answer of a claimed key and renews its TTL; not_found when the key is not claimed (or expired). */
export async function completeRequestKeyRow(
  ctx: SqlContext,
  tx: SqlExecutor,
  scope: Scope,
  key: string,
  response: StoredResponse,
) {
  const now = nowIso(ctx);
  const row = await tx.get(
    'SELECT ttl_seconds FROM request_keys WHERE tenant_id = ? AND user_id = ? AND key = ? AND expires_at > ?',
    [scope.tenant_id, scope.user_id, key, now],
  );
  if (row === undefined) throw notFound(ctx, 'request key', JSON.stringify(key));
  await tx.run(
    `UPDATE request_keys SET state = 'done', response = ?, expires_at = ? WHERE tenant_id = ? AND user_id = ? AND key = ?`,
    [
      JSON.stringify(response),
      isoAfter(ctx, Number(row.ttl_seconds) * 1000),
      scope.tenant_id,
      scope.user_id,
      key,
    ],
  );
}

export async function releaseRequestKeyRow(q: SqlExecutor, scope: Scope, key: string) {
  await q.run('DELETE FROM request_keys WHERE tenant_id = ? AND user_id = ? AND key = ?', [
    scope.tenant_id,
    scope.user_id,
    key,
  ]);
}
