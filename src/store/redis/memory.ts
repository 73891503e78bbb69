/**
 * Long-term memory rows: a hash per item (an optional native TTL) and a lex index of keys per namespace, so a
 * prefix lists with ZRANGEBYLEX. Leases and request keys: a small hash each, with a native TTL.
 */
import { isoAt } from '../../core/clock.js';
import type { MemoryItem } from '../../core/model.js';
import type { LeaseRow, Listed, MemoryFilter, PageRequest, RequestKeyRow } from '../core/driver.js';
import type { Lease, Scope, StoredResponse } from '../types.js';
import { CheckpointRows } from './checkpoints.js';

/** A request key as stored (the layout's field names). */
interface StoredRequest {
  readonly hash: string;
  readonly expires_ms: number;
  readonly ttl_ms: number;
  readonly response: StoredResponse | null;
}

const toLease = (held: Lease | null): LeaseRow | null =>
  held === null ? null : { owner: held.owner, expires_ms: Date.parse(held.expires_at) };

const toRequestKey = (held: StoredRequest | null): RequestKeyRow | null =>
  held === null
    ? null
    : {
        request_hash: held.hash,
        ttl_seconds: held.ttl_ms / 1000,
        expires_ms: held.expires_ms,
        response: held.response,
      };

/** Memory items, leases and request keys; with the rows before it, every row of a transaction. */
export class SmallRows extends CheckpointRows {
  private lease(scope: Scope, name: string): string {
    return this.keys(scope).lease(name);
  }
  private request(scope: Scope, key: string): string {
    return this.keys(scope).requestKey(key);
  }
  /** Time left until `expiresMs` on the store's clock, at least 1 ms. */
  private left(expiresMs: number): number {
    return Math.max(1, expiresMs - this.ctx.clock.now());
  }

  getMemory(scope: Scope, namespace: string, key: string): Promise<MemoryItem | null> {
    return this.record<MemoryItem>(this.keys(scope).memory(namespace, key));
  }
  async listMemory(
    scope: Scope,
    namespace: string,
    filter: MemoryFilter,
    page: PageRequest,
  ): Promise<Listed<MemoryItem>[]> {
    const { redis } = this.ctx;
    const keys = this.keys(scope);
    const index = keys.memoryIndex(namespace);
    const { prefix } = filter;
    const end = prefix === '' ? '+' : Buffer.concat([Buffer.from(`[${prefix}`, 'utf8'), Buffer.from([0xff])]);
    const found: Listed<MemoryItem>[] = [];
    const batch = Math.min(page.limit, 200);
    let after = typeof page.after === 'string' ? page.after : null;
    while (found.length < page.limit) {
      const start = after !== null ? `(${after}` : prefix === '' ? '-' : `[${prefix}`;
      const names = await redis.zrangebylex(index, start, end, 'LIMIT', 0, batch);
      if (names.length === 0) break;
      const rows = await Promise.all(names.map((name) => redis.hget(keys.memory(namespace, name), 'd')));
      for (let i = 0; i < names.length && found.length < page.limit; i++) {
        const json = rows[i];
        if (json === null || json === undefined) await redis.zrem(index, names[i] as string);
        else {
          const item = JSON.parse(json) as MemoryItem;
          if (item.expires_at === null || item.expires_at > filter.liveAt)
            found.push({ rec: item, pos: item.key });
        }
      }
      after = names[names.length - 1] as string;
      if (names.length < batch) break;
    }
    return found;
  }
  async putMemory(item: MemoryItem): Promise<void> {
    const keys = this.keys(item);
    const key = keys.memory(item.namespace, item.key);
    await this.row(key);
    const plan = this.p;
    plan.put(key, JSON.stringify(item));
    if (item.expires_at === null) plan.write('PERSIST', key);
    else plan.write('PEXPIRE', key, withGrace(this.left(Date.parse(item.expires_at))));
    plan.write('ZADD', keys.memoryIndex(item.namespace), 0, item.key);
  }
  async deleteMemory(scope: Scope, namespace: string, key: string): Promise<void> {
    const keys = this.keys(scope);
    if ((await this.row(keys.memory(namespace, key))) === null) return;
    this.p.remove(keys.memory(namespace, key));
    this.p.write('ZREM', keys.memoryIndex(namespace), key);
  }

  async getLease(scope: Scope, name: string): Promise<LeaseRow | null> {
    return toLease(await this.record<Lease>(this.lease(scope, name)));
  }
  async putLease(scope: Scope, name: string, next: LeaseRow, previous: LeaseRow | null): Promise<boolean> {
    const key = this.lease(scope, name);
    if (!sameLease(toLease(await this.record<Lease>(key)), previous)) return false;
    const held: Lease = { name, owner: next.owner, expires_at: isoAt(next.expires_ms) };
    this.p.put(key, JSON.stringify(held));
    this.p.write('PEXPIRE', key, withGrace(this.left(next.expires_ms)));
    return true;
  }
  async deleteLease(scope: Scope, name: string, previous: LeaseRow): Promise<boolean> {
    const key = this.lease(scope, name);
    if (!sameLease(toLease(await this.record<Lease>(key)), previous)) return false;
    this.p.remove(key);
    return true;
  }

  async getRequestKey(scope: Scope, key: string): Promise<RequestKeyRow | null> {
    return toRequestKey(await this.record<StoredRequest>(this.request(scope, key)));
  }
  async putRequestKey(
    scope: Scope,
    key: string,
    next: RequestKeyRow,
    previous: RequestKeyRow | null,
  ): Promise<boolean> {
    const redisKey = this.request(scope, key);
    const held = toRequestKey(await this.record<StoredRequest>(redisKey));
    if (
      (held === null) !== (previous === null) ||
      (held !== null && held.expires_ms !== previous?.expires_ms)
    )
      return false;
    const stored: StoredRequest = {
      hash: next.request_hash,
      expires_ms: next.expires_ms,
      ttl_ms: next.ttl_seconds * 1000,
      response: next.response,
    };
    this.p.put(redisKey, JSON.stringify(stored));
    this.p.write('PEXPIRE', redisKey, this.left(next.expires_ms) + 10_000);
    return true;
  }
  async deleteRequestKey(scope: Scope, key: string): Promise<void> {
    this.p.write('DEL', this.request(scope, key));
  }
}

/** A native TTL: the time left plus a grace of as much again, at most 10 s (as nativeTtlMs). */
const withGrace = (ms: number) => ms + Math.min(ms, 10_000);

function sameLease(held: LeaseRow | null, previous: LeaseRow | null): boolean {
  if (held === null || previous === null) return held === previous;
  return held.owner === previous.owner && held.expires_ms === previous.expires_ms;
}
