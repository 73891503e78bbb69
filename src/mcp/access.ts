/**
 * Who an MCP connection acts for, and the store scopes its tools use. The tenant and user always come from
 * the credential (a user token, a tenant key, or the CLI's `--tenant`/`--user`), never from a tool's
 * arguments: a tool's `user_id` only picks a user within what the credential already sees.
 *
 * - A user credential (`user_id` set) sees only its user's records; a `user_id` argument naming another user
 *   is refused as `invalid_request`, revealing nothing about that user.
 * - A tenant credential (`user_id` null) sees the whole tenant; lists take an optional `user_id`, and memory
 *   (a user's own space) needs one.
 */
import { invalidRequest } from '../core/errors.js';
import type { ReadScope, Scope } from '../store/types.js';

export interface McpAccess {
  readonly tenant_id: string;
  /** The one user this credential acts for; null for a whole tenant (a tenant key, loopback mode). */
  readonly user_id: string | null;
}

function mismatch(): never {
  throw invalidRequest(
    'user_id differs from the user of this credential; a user credential acts only as its own user',
    { field: 'user_id' },
  );
}

/** The read scope of a list or a lookup: the credential's user, or its tenant (optionally one user of it). */
export function readScopeFor(access: McpAccess, user_id?: string): ReadScope {
  if (access.user_id !== null) {
    if (user_id !== undefined && user_id !== access.user_id) mismatch();
    return { tenant_id: access.tenant_id, user_id: access.user_id };
  }
  return user_id === undefined ? { tenant_id: access.tenant_id } : { tenant_id: access.tenant_id, user_id };
}

/** The scope of one user's own space (memory): a tenant credential must name the user. */
export function userScopeFor(access: McpAccess, user_id?: string): Scope {
  if (access.user_id !== null) {
    if (user_id !== undefined && user_id !== access.user_id) mismatch();
    return { tenant_id: access.tenant_id, user_id: access.user_id };
  }
  if (user_id === undefined) {
    throw invalidRequest('user_id: required when acting for a whole tenant (a tenant key)', {
      field: 'user_id',
    });
  }
  return { tenant_id: access.tenant_id, user_id };
}

/** `tenant T` or `tenant T, user U`: for the server's instructions. */
export function describeAccess(access: McpAccess): string {
  return access.user_id === null
    ? `every user of tenant ${access.tenant_id}`
    : `user ${access.user_id} of tenant ${access.tenant_id}`;
}
