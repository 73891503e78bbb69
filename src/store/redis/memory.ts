/**
 * Long-term memory: a hash per item (optional native TTL; reads check expires_at themselves) and a lex
 * index of keys per namespace, so a prefix lists with ZRANGEBYLEX.
 */

import { isoAt } from '../../core/clock.js';
import { invalidRequest } from '../../core/errors.js';
import type { MemoryItem } from '../../core/model.js';
import { MEMORY_FIELDS, MEMORY_QUERY_FIELDS } from '../shared/known-fields.js';
import {
  DEFAULT_PAGE_LIMIT,
  MAX_PAGE_LIMIT,
  type MemoryQuery,
  type NewMemory,
  type Page,
  type Scope,
} from '../types.js';
import { type Ctx, type Plan, runPlan } from './plan.js';
import { nativeTtlMs, userKeys } from './scope.js';
import * as v from './validate.js';

const MAX_MEMORY_KEY = 1024;

function live(item: MemoryItem, nowMs: number): boolean {
  return item.expires_at === null || Date.parse(item.expires_at) > nowMs;
}

function checkNames(scope: Scope, namespace: string, key?: string): void {
  v.checkScope(scope);
  v.text(namespace, 'namespace');
  if (key !== undefined) v.text(key, 'key', MAX_MEMORY_KEY);
}

/** `input` checked, its fields named under `path` (`memory` for putMemory, a turn's `put_memory[i]`). */
export function checkNewMemory(scope: Scope, input: NewMemory, path = 'memory'): void {
  if (typeof input !== 'object' || input === null)
    throw invalidRequest(`[redis] ${path} input must be an object`);
  v.knownFields(input, MEMORY_FIELDS, path);
  v.checkScope(scope);
  const at = path === 'memory' ? '' : `${path}.`;
  v.text(input.namespace, `${at}namespace`);
  v.text(input.key, `${at}key`, MAX_MEMORY_KEY);
  v.jsonValue(input.value, `${at}value`);
  if (input.ttl_seconds !== undefined && input.ttl_seconds !== null)
    v.ttlSeconds(input.ttl_seconds, `${at}ttl_seconds`);
}

/** Writes a checked item in `plan`; a live one keeps its `created_at`. */
export async function preparePutMemory(plan: Plan, scope: Scope, input: NewMemory): Promise<MemoryItem> {
  const { ctx } = plan;
  const ttl = input.ttl_seconds ?? null;
  const keys = userKeys(ctx, scope.tenant_id, scope.user_id);
  const key = keys.memory(input.namespace, input.key);
  const now = ctx.clock.now();
  const row = await plan.read(key);
  const before = row === null ? null : (JSON.parse(row.json) as MemoryItem);
  const at = isoAt(now);
  const item: MemoryItem = {
    tenant_id: scope.tenant_id,
    user_id: scope.user_id,
    namespace: input.namespace,
    key: input.key,
    value: structuredClone(input.value),
    created_at: before !== null && live(before, now) ? before.created_at : at,
    updated_at: at,
    expires_at: ttl === null ? null : isoAt(now + ttl * 1000),
  };
  plan.put(key, JSON.stringify(item));
  if (ttl === null) plan.write('PERSIST', key);
  else plan.write('PEXPIRE', key, nativeTtlMs(now + ttl * 1000, now, ttl));
  plan.write('ZADD', keys.memoryIndex(input.namespace), 0, input.key);
  return item;
}

export function putMemory(ctx: Ctx, scope: Scope, input: NewMemory): Promise<MemoryItem> {
  checkNewMemory(scope, input);
  return runPlan(ctx, (plan) => preparePutMemory(plan, scope, input));
}

export async function getMemory(
  ctx: Ctx,
  scope: Scope,
  namespace: string,
  key: string,
): Promise<MemoryItem | null> {
  checkNames(scope, namespace, key);
  const json = await ctx.redis.hget(
    userKeys(ctx, scope.tenant_id, scope.user_id).memory(namespace, key),
    'd',
  );
  if (json === null) return null;
  const item = JSON.parse(json) as MemoryItem;
  return live(item, ctx.clock.now()) ? item : null;
}

export function deleteMemory(ctx: Ctx, scope: Scope, namespace: string, key: string): Promise<boolean> {
  checkNames(scope, namespace, key);
  const keys = userKeys(ctx, scope.tenant_id, scope.user_id);
  return runPlan(ctx, async (plan) => {
    const row = await plan.read(keys.memory(namespace, key));
    if (row === null) return false;
    plan.remove(keys.memory(namespace, key));
    plan.write('ZREM', keys.memoryIndex(namespace), key);
    return live(JSON.parse(row.json) as MemoryItem, ctx.clock.now());
  });
}

export async function listMemory(
  ctx: Ctx,
  scope: Scope,
  namespace: string,
  query: MemoryQuery = {},
): Promise<Page<MemoryItem>> {
  checkNames(scope, namespace);
  v.query(query, MEMORY_QUERY_FIELDS);
  const limit = v.limit(query.limit, DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT);
  const prefix = query.prefix === undefined ? '' : v.text(query.prefix, 'prefix', MAX_MEMORY_KEY, true);
  const list = v.cursorList(`memory:${namespace}`, scope);
  let after = v.decodeCursor(list, query.cursor);
  const keys = userKeys(ctx, scope.tenant_id, scope.user_id);
  const index = keys.memoryIndex(namespace);
  const end = prefix === '' ? '+' : Buffer.concat([Buffer.from(`[${prefix}`, 'utf8'), Buffer.from([0xff])]);
  const found: MemoryItem[] = [];
  const batch = Math.min(limit + 1, 200);
  while (found.length <= limit) {
    const start = after !== null ? `(${after}` : prefix === '' ? '-' : `[${prefix}`;
    const names = await ctx.redis.zrangebylex(index, start, end, 'LIMIT', 0, batch);
    if (names.length === 0) break;
    const rows = await Promise.all(names.map((name) => ctx.redis.hget(keys.memory(namespace, name), 'd')));
    const now = ctx.clock.now();
    for (let i = 0; i < names.length && found.length <= limit; i++) {
      const json = rows[i];
      if (json === null || json === undefined) await ctx.redis.zrem(index, names[i] as string);
      else {
        const item = JSON.parse(json) as MemoryItem;
        if (live(item, now)) found.push(item);
      }
    }
    after = names[names.length - 1] as string;
    if (names.length < batch) break;
  }
  const items = found.slice(0, limit);
  const last = items[items.length - 1];
  const next = found.length > limit && last !== undefined ? v.encodeCursor(list, last.key) : null;
  return { items, next_cursor: next };
}
