/**
 * A session's run lease and its head in one round trip (PostgreSQL), so that a turn's first two reads cost
 * one. The head must be read after the lease is taken: the previous holder's last commit frees the lease,
 * and what it wrote has to be in the head the next run starts from.
 *
 * One statement reads with one snapshot, taken as it starts. The lease's upsert, when it waits for another
 * transaction holding the lease's row (the previous holder freeing it) and then takes the lease, acts on a
 * row newer than that snapshot, and the head read with it can be older than the lease. So the statement
 * also reads, with the same snapshot, whether the lease had a row at all. Without one, no holder wrote under
 * it after the snapshot (a holder's row is there until its last commit deletes it, and that commit is then
 * in the snapshot), and the head is the one a read after the lease gives. With one (a lease that expired
 * with its dead holder, or freed while the statement ran), the head is read again, as a statement of its
 * own. SQLite (in-process, no round trip to save) reads the two in turn.
 */
import { isoAt } from '../../core/clock.js';
import type { Lease, Scope, SessionHead } from '../types.js';
import { nowIso, type SqlContext } from './context.js';
import { acquireLeaseRow } from './coordination.js';
import type { SqlExecutor } from './executor.js';
import { type HeadReads, headFromRow, headStatement, selectSessionHead } from './messages.js';

export interface LeaseWithHeadRow {
  readonly lease: Lease;
  readonly head: SessionHead | null;
}

export async function acquireLeaseWithHeadRow(
  ctx: SqlContext,
  q: SqlExecutor,
  scope: Scope,
  name: string,
  owner: string,
  ttl_ms: number,
  session_id: string,
  reads: HeadReads,
): Promise<LeaseWithHeadRow | null> {
  if (ctx.adapter !== 'postgres') {
    const lease = await acquireLeaseRow(ctx, q, scope, name, owner, ttl_ms);
    if (lease === null) return null;
    return { lease, head: await selectSessionHead(ctx, q, scope, session_id, reads) };
  }
  const expires_at = isoAt(ctx.clock.now() + ttl_ms);
  const head = headStatement(ctx, scope, session_id, reads);
  const row = await q.get(
    `WITH held AS (SELECT 1 FROM leases WHERE tenant_id = ? AND user_id = ? AND name = ?),
      taken AS (INSERT INTO leases (tenant_id, user_id, name, owner, expires_at) VALUES (?, ?, ?, ?, ?)
        ON CONFLICT (tenant_id, user_id, name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
        WHERE leases.owner = excluded.owner OR leases.expires_at <= ? RETURNING 1)
      SELECT (SELECT count(*) FROM taken) AS lease_taken, (SELECT count(*) FROM held) AS lease_had_row, h.*
      FROM (SELECT 1) AS one LEFT JOIN (${head.sql}) AS h ON true`,
    [
      scope.tenant_id,
      scope.user_id,
      name,
      scope.tenant_id,
      scope.user_id,
      name,
      owner,
      expires_at,
      nowIso(ctx),
      ...head.params,
    ],
  );
  if (row === undefined || Number(row.lease_taken) === 0) return null;
  const lease: Lease = { name, owner, expires_at };
  if (Number(row.lease_had_row) > 0) {
    return { lease, head: await selectSessionHead(ctx, q, scope, session_id, reads) };
  }
  return { lease, head: await headFromRow(ctx, q, scope, session_id, reads, head, row) };
}
