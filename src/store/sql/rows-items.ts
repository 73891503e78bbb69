/** Memory item, lease and request key rows of the SQL driver. */
import { isoAt } from '../../core/clock.js';
import type { JsonValue } from '../../core/json.js';
import type { MemoryItem } from '../../core/model.js';
import type { DriverTx, Listed, RequestKeyRow } from '../core/driver.js';
import type { Scope, StoredResponse } from '../types.js';
import { LIMIT_PARAM, OptimisticMiss, type SqlParam } from './executor.js';
import { itemKey } from './known-rows.js';
import { MEMORY, toJson } from './rows.js';
import type { SqlTxEnv } from './tx-env.js';

type ItemRows = Pick<
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

const ms = (iso: unknown) => Date.parse(String(iso));

const memoryKey = (scope: Scope, namespace: string, key: string) =>
  `memory:${scope.tenant_id}\u0000${scope.user_id}\u0000${namespace}\u0000${key}`;

const HOLD_ITEM = `SELECT 1 FROM memory WHERE tenant_id = ? AND user_id = ? AND namespace = ? AND key = ?
  AND value = ? AND created_at = ? AND updated_at = ? AND COALESCE(expires_at, '') = ? FOR SHARE`;
const HOLD_NO_ITEM =
  'SELECT 1 WHERE NOT EXISTS (SELECT 1 FROM memory WHERE tenant_id = ? AND user_id = ? AND namespace = ? AND key = ?)';

export function itemRows({ q, deferred, kept, known, knownRows }: SqlTxEnv): ItemRows {
  /** An item a read found, for the optimistic writes (a preference read in a turn, written in a later one). */
  const found = (item: MemoryItem) => knownRows?.memory.set(itemKey(item, item.namespace, item.key), item);
  return {
    async getMemory(scope, namespace, key) {
      const sql = `SELECT ${MEMORY.columns} FROM memory WHERE tenant_id = ? AND user_id = ? AND namespace = ? AND key = ?`;
      const params = [scope.tenant_id, scope.user_id, namespace, key];
      if (deferred !== null) {
        // Optimistic: an item it wrote is read back from what it wrote; any other by its key.
        const own = kept.get(memoryKey(scope, namespace, key));
        if (own?.kind === 'memory') return own.row;
        if (known !== null) {
          // As this store last saw it; else taken to be absent (an item is written far more often than
          // found: a run's mark, a first preference). Held so with the writes: one that is not runs again.
          const name = itemKey(scope, namespace, key);
          const stored = known.rows.memory.get(name) ?? null;
          known.touched.memory.add(name);
          known.memory.set(name, stored);
          if (stored === null) deferred.hold(`item:${name}`, HOLD_NO_ITEM, params);
          else
            deferred.hold(`item:${name}`, HOLD_ITEM, [
              ...params,
              toJson(stored.value),
              stored.created_at,
              stored.updated_at,
              stored.expires_at ?? '',
            ]);
          return stored;
        }
        const row = await deferred.getRow(sql, params);
        return row === undefined ? null : MEMORY.decode(row);
      }
      const row = await q.get(sql, params);
      if (row === undefined) return null;
      const item = MEMORY.decode(row);
      found(item);
      return item;
    },
    async listMemory(scope, namespace, filter, page) {
      const conditions = [
        'tenant_id = ?',
        'user_id = ?',
        'namespace = ?',
        '(expires_at IS NULL OR expires_at > ?)',
      ];
      const params: SqlParam[] = [scope.tenant_id, scope.user_id, namespace, filter.liveAt];
      if (filter.prefix !== '') {
        conditions.push('substr(key, 1, length(CAST(? AS TEXT))) = ?');
        params.push(filter.prefix, filter.prefix);
      }
      if (typeof page.after === 'string') {
        conditions.push('key > ?');
        params.push(page.after);
      }
      const rows = await q.all(
        `SELECT ${MEMORY.columns} FROM memory WHERE ${conditions.join(' AND ')} ORDER BY key ${LIMIT_PARAM}`,
        [...params, page.limit],
      );
      return rows.map((row): Listed<MemoryItem> => {
        const item = MEMORY.decode(row);
        found(item);
        return { rec: item, pos: String(row.key) };
      });
    },
    async putMemory(item) {
      await q.run(
        `INSERT INTO memory (${MEMORY.columns}) VALUES ${MEMORY.placeholders}
          ON CONFLICT (tenant_id, user_id, namespace, key) DO UPDATE SET value = excluded.value,
          created_at = excluded.created_at, updated_at = excluded.updated_at, expires_at = excluded.expires_at`,
        MEMORY.params(item),
      );
      if (deferred !== null)
        kept.set(memoryKey(item, item.namespace, item.key), { kind: 'memory', row: item });
      known?.memory.set(itemKey(item, item.namespace, item.key), item);
    },
    async deleteMemory(scope, namespace, key) {
      if (deferred !== null) {
        // A delete may find nothing to delete: guarded only by the hold of the attempt's read of the item,
        // when it read it (a delete with no read before it answers nothing of what it found).
        if (kept.has(memoryKey(scope, namespace, key))) throw new OptimisticMiss('a memory delete');
        const name = itemKey(scope, namespace, key);
        const held = known?.memory.get(name);
        known?.memory.set(name, null);
        // Held absent: nothing to delete.
        if (held === null) return;
      }
      await q.run('DELETE FROM memory WHERE tenant_id = ? AND user_id = ? AND namespace = ? AND key = ?', [
        scope.tenant_id,
        scope.user_id,
        namespace,
        key,
      ]);
    },
    async getLease(scope, name) {
      const row = await q.get(
        'SELECT owner, expires_at FROM leases WHERE tenant_id = ? AND user_id = ? AND name = ?',
        [scope.tenant_id, scope.user_id, name],
      );
      return row === undefined ? null : { owner: String(row.owner), expires_ms: ms(row.expires_at) };
    },
    async putLease(scope, name, next, previous) {
      const expires = isoAt(next.expires_ms);
      if (previous === null) {
        const changed = await q.run(
          'INSERT INTO leases (tenant_id, user_id, name, owner, expires_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING',
          [scope.tenant_id, scope.user_id, name, next.owner, expires],
        );
        return changed === 1;
      }
      const changed = await q.run(
        'UPDATE leases SET owner = ?, expires_at = ? WHERE tenant_id = ? AND user_id = ? AND name = ? AND owner = ? AND expires_at = ?',
        [
          next.owner,
          expires,
          scope.tenant_id,
          scope.user_id,
          name,
          previous.owner,
          isoAt(previous.expires_ms),
        ],
      );
      return changed === 1;
    },
    async deleteLease(scope, name, previous) {
      const changed = await q.run(
        'DELETE FROM leases WHERE tenant_id = ? AND user_id = ? AND name = ? AND owner = ? AND expires_at = ?',
        [scope.tenant_id, scope.user_id, name, previous.owner, isoAt(previous.expires_ms)],
      );
      return changed === 1;
    },
    async getRequestKey(scope, key) {
      const row = await q.get(
        'SELECT request_hash, state, response, ttl_seconds, expires_at FROM request_keys WHERE tenant_id = ? AND user_id = ? AND key = ?',
        [scope.tenant_id, scope.user_id, key],
      );
      if (row === undefined) return null;
      const response =
        String(row.state) === 'done' ? (JSON.parse(String(row.response)) as StoredResponse) : null;
      return {
        request_hash: String(row.request_hash),
        ttl_seconds: Number(row.ttl_seconds),
        expires_ms: ms(row.expires_at),
        response,
      } satisfies RequestKeyRow;
    },
    async putRequestKey(scope, key, next, previous) {
      const state = next.response === null ? 'in_progress' : 'done';
      const response = next.response === null ? null : JSON.stringify(next.response as unknown as JsonValue);
      if (previous === null) {
        const changed = await q.run(
          `INSERT INTO request_keys (tenant_id, user_id, key, request_hash, state, response, ttl_seconds, expires_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
          [
            scope.tenant_id,
            scope.user_id,
            key,
            next.request_hash,
            state,
            response,
            next.ttl_seconds,
            isoAt(next.expires_ms),
          ],
        );
        return changed === 1;
      }
      const changed = await q.run(
        `UPDATE request_keys SET request_hash = ?, state = ?, response = ?, ttl_seconds = ?, expires_at = ?
          WHERE tenant_id = ? AND user_id = ? AND key = ? AND expires_at = ?`,
        [
          next.request_hash,
          state,
          response,
          next.ttl_seconds,
          isoAt(next.expires_ms),
          scope.tenant_id,
          scope.user_id,
          key,
          isoAt(previous.expires_ms),
        ],
      );
      return changed === 1;
    },
    async deleteRequestKey(scope, key) {
      await q.run('DELETE FROM request_keys WHERE tenant_id = ? AND user_id = ? AND key = ?', [
        scope.tenant_id,
        scope.user_id,
        key,
      ]);
    },
  };
}
