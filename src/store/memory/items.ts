/** Long-term memory items: per user and namespace, ordered by key, with an optional TTL. */

import { isoAt } from '../../core/clock.js';
import type { MemoryItem } from '../../core/model.js';
import { MEMORY_FIELDS, MEMORY_QUERY_FIELDS } from '../shared/known-fields.js';
import type { MemoryQuery, NewMemory, Page, Scope } from '../types.js';
import { type Ctx, copy, key } from './db.js';
import { byKey } from './paging.js';
import { checkScope, fail, json, name, positiveInt, record, text } from './validate.js';

function live(c: Ctx, k: string): MemoryItem | null {
  const item = c.t.memory.get(k);
  if (item === undefined) return null;
  return item.expires_at !== null && Date.parse(item.expires_at) <= c.now ? null : item;
}

/** `input` checked (paths under `path`), as putMemory and a turn's `put_memory` take it. */
export function checkNewMemory(input: NewMemory, path = 'memory') {
  record(input, path, MEMORY_FIELDS);
  const namespace = name(input.namespace, `${path}.namespace`);
  const itemKey = name(input.key, `${path}.key`);
  if (!('value' in input)) fail(`${path}.value is required (use null for none)`);
  const value = json(input.value, `${path}.value`);
  const ttl =
    input.ttl_seconds === undefined || input.ttl_seconds === null
      ? null
      : positiveInt(input.ttl_seconds, `${path}.ttl_seconds`);
  return { namespace, key: itemKey, value, ttl };
}

export type CheckedMemory = ReturnType<typeof checkNewMemory>;

/** Writes a checked item; a live one keeps its `created_at`. */
export function writeMemory(c: Ctx, scope: Scope, input: CheckedMemory): MemoryItem {
  const k = key(scope.tenant_id, scope.user_id, input.namespace, input.key);
  const previous = live(c, k);
  const at = isoAt(c.now);
  const item: MemoryItem = {
    tenant_id: scope.tenant_id,
    user_id: scope.user_id,
    namespace: input.namespace,
    key: input.key,
    value: input.value,
    created_at: previous?.created_at ?? at,
    updated_at: at,
    expires_at: input.ttl === null ? null : isoAt(c.now + input.ttl * 1000),
  };
  c.tx.set(c.t.memory, k, item);
  return copy(item);
}

export function putMemory(c: Ctx, scope: Scope, input: NewMemory): MemoryItem {
  checkScope(scope);
  return writeMemory(c, scope, checkNewMemory(input));
}

export function getMemory(c: Ctx, scope: Scope, namespace: string, itemKey: string): MemoryItem | null {
  checkScope(scope);
  name(namespace, 'namespace');
  name(itemKey, 'key');
  const item = live(c, key(scope.tenant_id, scope.user_id, namespace, itemKey));
  return item === null ? null : copy(item);
}

export function deleteMemory(c: Ctx, scope: Scope, namespace: string, itemKey: string): boolean {
  checkScope(scope);
  name(namespace, 'namespace');
  name(itemKey, 'key');
  const k = key(scope.tenant_id, scope.user_id, namespace, itemKey);
  const existed = live(c, k) !== null;
  c.tx.delete(c.t.memory, k);
  return existed;
}

export function listMemory(
  c: Ctx,
  scope: Scope,
  namespace: string,
  query: MemoryQuery = {},
): Page<MemoryItem> {
  checkScope(scope);
  name(namespace, 'namespace');
  record(query, 'query', MEMORY_QUERY_FIELDS);
  const prefix = query.prefix === undefined ? '' : text(query.prefix, 'prefix');
  const head = key(scope.tenant_id, scope.user_id, namespace, '');
  const items: MemoryItem[] = [];
  for (const [k, item] of c.t.memory) {
    if (!k.startsWith(head) || !item.key.startsWith(prefix)) continue;
    if (live(c, k) !== null) items.push(item);
  }
  return byKey({ key: c.t.cursorKey, name: `memory:${namespace}`, scope }, items, (item) => item.key, query);
}

/** Drops expired memory items (not counted by the sweep, which counts sessions). */
export function sweepMemory(c: Ctx): void {
  for (const k of [...c.t.memory.keys()]) {
    if (live(c, k) === null) c.tx.delete(c.t.memory, k);
  }
}
