/**
 * Long-term memory rows: a hash per item (an optional native TTL) and a lex index of keys per namespace, so a
 * prefix lists with ZRANGEBYLEX. Leases and request keys: a small hash each, with a native TTL.
 */
import { isoAt } from '../../core/clock.js';
import type { MemoryItem } from '../../core/model.js';
import type { DriverTx, LeaseRow, Listed, RequestKeyRow } from '../core/driver.js';
import type { Lease, StoredResponse } from '../types.js';
import type { Io } from './io.js';

type SmallRows = Pick<
  DriverTx,
  | 'getMemory'
  | 'listMemory'
  | 'putMemory'
  | 'deleteMemory'
  | 'getLease'
  | 'putLease'
  | 'deleteLease'
  | 'getRequestKey'
  | 'putRequestKey'
  | 'deleteRequestKey'
>;

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

export function smallRows(io: Io): SmallRows {
  const { ctx } = io;
  const lease = (tenant_id: string, user_id: string, name: string) =>
    io.keys({ tenant_id, user_id }).lease(name);
  const request = (tenant_id: string, user_id: string, key: string) =>
    io.keys({ tenant_id, user_id }).requestKey(key);
  /** Time left until `expiresMs` on the store's clock, at least 1 ms. */
  const left = (expiresMs: number) => Math.max(1, expiresMs - ctx.clock.now());

  return {
    getMemory: (scope, namespace, key) => io.record<MemoryItem>(io.keys(scope).memory(namespace, key)),
    async listMemory(scope, namespace, filter, page) {
      const keys = io.keys(scope);
      const index = keys.memoryIndex(namespace);
      const { prefix } = filter;
      const end =
        prefix === '' ? '+' : Buffer.concat([Buffer.from(`[${prefix}`, 'utf8'), Buffer.from([0xff])]);
      const found: Listed<MemoryItem>[] = [];
      const batch = Math.min(page.limit, 200);
      let after = typeof page.after === 'string' ? page.after : null;
      while (found.length < page.limit) {
        const start = after !== null ? `(${after}` : prefix === '' ? '-' : `[${prefix}`;
        const names = await ctx.redis.zrangebylex(index, start, end, 'LIMIT', 0, batch);
        if (names.length === 0) break;
        const rows = await Promise.all(
          names.map((name) => ctx.redis.hget(keys.memory(namespace, name), 'd')),
        );
        for (let i = 0; i < names.length && found.length < page.limit; i++) {
          const json = rows[i];
          if (json === null || json === undefined) await ctx.redis.zrem(index, names[i] as string);
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
    },
    async putMemory(item) {
      const keys = io.keys(item);
      const key = keys.memory(item.namespace, item.key);
      await io.row(key);
      const plan = io.p;
      plan.put(key, JSON.stringify(item));
      if (item.expires_at === null) plan.write('PERSIST', key);
      else plan.write('PEXPIRE', key, withGrace(left(Date.parse(item.expires_at))));
      plan.write('ZADD', keys.memoryIndex(item.namespace), 0, item.key);
    },
    async deleteMemory(scope, namespace, key) {
      const keys = io.keys(scope);
      if ((await io.row(keys.memory(namespace, key))) === null) return;
      io.p.remove(keys.memory(namespace, key));
      io.p.write('ZREM', keys.memoryIndex(namespace), key);
    },

    getLease: async (scope, name) =>
      toLease(await io.record<Lease>(lease(scope.tenant_id, scope.user_id, name))),
    async putLease(scope, name, next, previous) {
      const key = lease(scope.tenant_id, scope.user_id, name);
      if (!sameLease(toLease(await io.record<Lease>(key)), previous)) return false;
      const held: Lease = { name, owner: next.owner, expires_at: isoAt(next.expires_ms) };
      io.p.put(key, JSON.stringify(held));
      io.p.write('PEXPIRE', key, withGrace(left(next.expires_ms)));
      return true;
    },
    async deleteLease(scope, name, previous) {
      const key = lease(scope.tenant_id, scope.user_id, name);
      if (!sameLease(toLease(await io.record<Lease>(key)), previous)) return false;
      io.p.remove(key);
      return true;
    },

    getRequestKey: async (scope, key) =>
      toRequestKey(await io.record<StoredRequest>(request(scope.tenant_id, scope.user_id, key))),
    async putRequestKey(scope, key, next, previous) {
      const redisKey = request(scope.tenant_id, scope.user_id, key);
      const held = toRequestKey(await io.record<StoredRequest>(redisKey));
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
      io.p.put(redisKey, JSON.stringify(stored));
      io.p.write('PEXPIRE', redisKey, left(next.expires_ms) + 10_000);
      return true;
    },
    async deleteRequestKey(scope, key) {
      io.p.write('DEL', request(scope.tenant_id, scope.user_id, key));
    },
  };
}

/** A native TTL: the time left plus a grace of as much again, at most 10 s (as nativeTtlMs). */
const withGrace = (ms: number) => ms + Math.min(ms, 10_000);

function sameLease(held: LeaseRow | null, previous: LeaseRow | null): boolean {
  if (held === null || previous === null) return held === previous;
  return held.owner === previous.owner && held.expires_ms === previous.expires_ms;
}
