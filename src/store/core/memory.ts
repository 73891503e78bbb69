/** Long-term memory items: per user and namespace, ordered by key, with an optional TTL. */
import { isoAt } from '../../core/clock.js';
import type { JsonValue } from '../../core/json.js';
import type { MemoryItem } from '../../core/model.js';
import { MEMORY_FIELDS, MEMORY_QUERY_FIELDS } from '../shared/known-fields.js';
import type { MemoryQuery, NewMemory, Page, Scope } from '../types.js';
import type { CoreEnv, Op, WriteOp } from './context.js';
import { askPage, toPage } from './paging.js';

export interface CheckedMemory {
  readonly namespace: string;
  readonly key: string;
  readonly value: JsonValue;
  readonly ttl: number | null;
}

/** `input` checked (paths under `path`), as putMemory and a turn's `put_memory` take it. */
export function checkNewMemory(env: CoreEnv, input: NewMemory, path = 'memory'): CheckedMemory {
  const { v } = env;
  v.record(input, path, MEMORY_FIELDS);
  const namespace = v.name(input.namespace, `${path}.namespace`);
  const key = v.name(input.key, `${path}.key`);
  if (!('value' in input)) v.fail(`${path}.value is required (use null for none)`);
  const value = v.json(input.value, `${path}.value`);
  const ttl =
    input.ttl_seconds === undefined || input.ttl_seconds === null
      ? null
      : v.positiveInt(input.ttl_seconds, `${path}.ttl_seconds`);
  return { namespace, key, value, ttl };
}

const live = (item: MemoryItem | null, now: number) =>
  item === null || (item.expires_at !== null && Date.parse(item.expires_at) <= now) ? null : item;

export async function getMemory(
  op: Op,
  scope: Scope,
  namespace: string,
  key: string,
): Promise<MemoryItem | null> {
  return live(await op.tx.getMemory(scope, namespace, key), op.now);
}

/** Writes a checked item; a live one keeps its `created_at`. */
export async function writeMemory(op: WriteOp, scope: Scope, input: CheckedMemory): Promise<MemoryItem> {
  const previous = await getMemory(op, scope, input.namespace, input.key);
  const at = isoAt(op.now);
  const item: MemoryItem = {
    tenant_id: scope.tenant_id,
    user_id: scope.user_id,
    namespace: input.namespace,
    key: input.key,
    value: input.value,
    created_at: previous?.created_at ?? at,
    updated_at: at,
    expires_at: input.ttl === null ? null : isoAt(op.now + input.ttl * 1000),
  };
  await op.tx.putMemory(item);
  return item;
}

export async function deleteMemory(
  op: WriteOp,
  scope: Scope,
  namespace: string,
  key: string,
): Promise<boolean> {
  const existed = (await getMemory(op, scope, namespace, key)) !== null;
  await op.tx.deleteMemory(scope, namespace, key);
  return existed;
}

export async function listMemory(
  op: Op,
  scope: Scope,
  namespace: string,
  query: MemoryQuery,
): Promise<Page<MemoryItem>> {
  const { v } = op.env;
  v.record(query, 'query', MEMORY_QUERY_FIELDS);
  const prefix = query.prefix === undefined ? '' : v.text(query.prefix, 'prefix');
  const asked = await askPage(op.env, `memory:${namespace}`, scope, query);
  const rows = await op.tx.listMemory(scope, namespace, { prefix, liveAt: isoAt(op.now) }, asked.request);
  return await toPage(op.env, asked, rows);
}
