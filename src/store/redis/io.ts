/**
 * What the rows of one call read and write through: inside a transaction, a plan (every record read is
 * checked at commit, and later reads of the plan see its own writes); outside one, Redis directly.
 */
import { AgentStateError } from '../../core/errors.js';
import type { ReadScope, Scope } from '../types.js';
import type { UserKeys } from './keys.js';
import type { Ctx, Plan } from './plan.js';
import { tenantKeys, userKeys } from './scope.js';

export interface Row {
  readonly json: string;
  readonly extra: Record<string, string | null>;
}

export class Io {
  /** Idempotency keys this transaction read or wrote (`<hash key>\0<key>` -> action id or null). */
  readonly actionKeys = new Map<string, string | null>();

  constructor(
    readonly ctx: Ctx,
    readonly plan: Plan | null,
  ) {}

  /** The plan writes go to. */
  get p(): Plan {
    if (this.plan === null) throw new AgentStateError('internal', '[redis] a write outside a transaction');
    return this.plan;
  }

  keys(owner: Pick<Scope, 'tenant_id' | 'user_id'>): UserKeys {
    return userKeys(this.ctx, owner.tenant_id, owner.user_id);
  }

  /** The owner of `id` in scope: the scope's user, or the one the tenant's owner hash names. */
  async ownerOf(scope: ReadScope, id: string): Promise<string | null> {
    return scope.user_id ?? this.ctx.redis.hget(tenantKeys(this.ctx, scope.tenant_id).owners(), id);
  }

  /** The keys of the owner of `id` in scope; null when the id is none of the scope's. */
  async owner(scope: ReadScope, id: string): Promise<UserKeys | null> {
    const user = await this.ownerOf(scope, id);
    return user === null ? null : userKeys(this.ctx, scope.tenant_id, user);
  }

  /** A record (hash field d) with the `extra` fields asked for; null when it does not exist. */
  async row(key: string, extra: readonly string[] = []): Promise<Row | null> {
    if (this.plan !== null) return this.plan.read(key, extra);
    const values = await this.ctx.redis.hmget(key, 'd', ...extra);
    const json = values[0];
    if (json === null || json === undefined) return null;
    const fields: Record<string, string | null> = {};
    extra.forEach((name, i) => {
      fields[name] = values[i + 1] ?? null;
    });
    return { json, extra: fields };
  }

  async record<T>(key: string, extra: readonly string[] = []): Promise<T | null> {
    const row = await this.row(key, extra);
    return row === null ? null : (JSON.parse(row.json) as T);
  }
}
