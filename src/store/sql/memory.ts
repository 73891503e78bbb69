/** Long-term memory items: per user and namespace, ordered by key, with an optional TTL. */

import type { JsonValue } from '../../core/json.js';
import type { MemoryItem } from '../../core/model.js';
import { MEMORY_FIELDS, MEMORY_QUERY_FIELDS } from '../shared/known-fields.js';
import type { MemoryQuery, NewMemory, Page, Scope } from '../types.js';
import { isoAfter, nowIso, type SqlContext } from './context.js';
import type { SqlExecutor, SqlParam } from './executor.js';
import { LIMIT_PARAM } from './executor.js';
import { keyCursor, pageLimit, toPage } from './paging.js';
import { MEMORY_COLUMNS, toJson, toMemory } from './rows.js';

export interface CheckedMemory {
  readonly namespace: string;
  readonly key: string;
  readonly value: JsonValue;
  readonly ttl_seconds: number | null;
}

export function checkNewMemory(ctx: SqlContext, input: NewMemory, path = 'memory'): CheckedMemory {
  const { v } = ctx;
  v.record(input, path, MEMORY_FIELDS);
  const namespace = v.name(input.namespace, `${path}.namespace`);
  const key = v.name(input.key, `${path}.key`);
  if (!('value' in input)) v.fail(`${path}.value is required (use null for none)`);
  return {
    namespace,
    key,
    value: v.json(input.value, `${path}.value`),
    ttl_seconds:
      input.ttl_seconds === undefined || input.ttl_seconds === null
        ? null
        : v.positiveInt(input.ttl_seconds, `${path}.ttl_seconds`),
  };
}

/**
 * The item `input` makes now, and the upsert that writes it (RETURNING the `created_at` it keeps): an item
 * that is still live keeps its `created_at` (an expired one counts as absent, as every read does).
 */
export function memoryUpsert(ctx: SqlContext, scope: Scope, input: CheckedMemory, alias = 'created_at') {
  const now = nowIso(ctx);
  const item: MemoryItem = {
    tenant_id: scope.tenant_id,
    user_id: scope.user_id,
    namespace: input.namespace,
    key: input.key,
    value: input.value,
    created_at: now,
    updated_at: now,
    expires_at: input.ttl_seconds === null ? null : isoAfter(ctx, input.ttl_seconds * 1000),
  };
  const sql = `INSERT INTO memory (${MEMORY_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
      ON CONFLICT (tenant_id, user_id, namespace, key) DO UPDATE SET value = excluded.value,
      created_at = CASE WHEN memory.expires_at IS NULL OR memory.expires_at > ? THEN memory.created_at
        ELSE excluded.created_at END,
      updated_at = excluded.updated_at, expires_at = excluded.expires_at
      RETURNING created_at AS ${alias}`;
  const params: SqlParam[] = [
    item.tenant_id,
    item.user_id,
    item.namespace,
    item.key,
    toJson(item.value),
    item.created_at,
    item.updated_at,
    item.expires_at,
    now,
  ];
  return { item, sql, params };
}

/** `item` with the `created_at` the upsert kept. */
export function withCreatedAt(item: MemoryItem, created: unknown): MemoryItem {
  return created === undefined || created === null ? item : { ...item, created_at: String(created) };
}

/** One statement, atomic by itself (no transaction around it). */
export async function upsertMemory(ctx: SqlContext, q: SqlExecutor, scope: Scope, input: CheckedMemory) {
  const { item, sql, params } = memoryUpsert(ctx, scope, input);
  const row = await q.get(sql, params);
  return withCreatedAt(item, row?.created_at);
}

const LIVE = '(expires_at IS NULL OR expires_at > ?)';

export async function selectMemory(
  ctx: SqlContext,
  q: SqlExecutor,
  scope: Scope,
  namespace: string,
  key: string,
) {
  const row = await q.get(
    `SELECT ${MEMORY_COLUMNS} FROM memory WHERE tenant_id = ? AND user_id = ? AND namespace = ? AND key = ? AND ${LIVE}`,
    [scope.tenant_id, scope.user_id, namespace, key, nowIso(ctx)],
  );
  return row === undefined ? null : toMemory(row);
}

export async function deleteMemoryRow(
  ctx: SqlContext,
  tx: SqlExecutor,
  scope: Scope,
  namespace: string,
  key: string,
) {
  const visible = await selectMemory(ctx, tx, scope, namespace, key);
  await tx.run('DELETE FROM memory WHERE tenant_id = ? AND user_id = ? AND namespace = ? AND key = ?', [
    scope.tenant_id,
    scope.user_id,
    namespace,
    key,
  ]);
  return visible !== null;
}

export async function listMemoryRows(
  ctx: SqlContext,
  q: SqlExecutor,
  scope: Scope,
  namespace: string,
  query: MemoryQuery,
) {
  const { v } = ctx;
  v.record(query, 'query', MEMORY_QUERY_FIELDS);
  const prefix = query.prefix === undefined ? '' : v.text(query.prefix, 'prefix');
  const limit = pageLimit(ctx, query);
  const list = { name: `memory:${namespace}`, scope };
  const cursor = await keyCursor(ctx, q, list, query.cursor);
  const conditions = ['tenant_id = ?', 'user_id = ?', 'namespace = ?', LIVE];
  const params: SqlParam[] = [scope.tenant_id, scope.user_id, namespace, nowIso(ctx)];
  if (prefix !== '') {
    conditions.push('substr(key, 1, length(CAST(? AS TEXT))) = ?');
    params.push(prefix, prefix);
  }
  if (cursor !== null) {
    conditions.push('key > ?');
    params.push(cursor);
  }
  const rows = await q.all(
    `SELECT ${MEMORY_COLUMNS} FROM memory WHERE ${conditions.join(' AND ')} ORDER BY key ${LIMIT_PARAM}`,
    [...params, limit + 1],
  );
  return (await toPage(ctx, q, list, rows, limit, toMemory, 'key')) as Page<MemoryItem>;
}
