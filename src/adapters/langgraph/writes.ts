/**
 * Pending writes, as memory items in the `<namespace>.writes` namespace: one item per (checkpoint, task)
 * holding that task's writes by index. LangGraph's rule: a special channel (error, interrupt, resume,
 * scheduled; a negative index) overwrites, any other write keeps the first value stored for (task, idx).
 */
import {
  type CheckpointPendingWrite,
  compareWritesSortKeys,
  type PendingWrite,
  type SerializerProtocol,
  WRITES_IDX_MAP,
  writesSortKey,
} from '@langchain/langgraph-checkpoint';
import type { JsonObject, JsonValue } from '../../core/json.js';
import type { Scope, StateStore } from '../../store/types.js';
import { decodeValue, encodeValue, setOwn } from './codec.js';
import { type RunRef, writesKey, writesPrefix } from './keys.js';

interface StoredWrite {
  readonly c: string;
  readonly k: string;
  readonly d: JsonValue;
}

export class WritesStore {
  /** One chain per key, so two calls for the same task merge one after the other in this process. */
  private readonly chains = new Map<string, Promise<unknown>>();

  constructor(
    private readonly store: StateStore,
    private readonly scope: Scope,
    private readonly namespace: string,
    private readonly serde: SerializerProtocol,
  ) {}

  async put(
    run: RunRef,
    checkpoint_id: string,
    writes: readonly PendingWrite[],
    task_id: string,
    task_path: string,
  ): Promise<void> {
    const encoded = await Promise.all(
      writes.map(async ([channel, value], i) => {
        const idx = WRITES_IDX_MAP[channel] ?? i;
        return { idx, write: { c: channel, ...pack(await encodeValue(this.serde, value)) } };
      }),
    );
    const key = writesKey(run, checkpoint_id, task_id);
    const previous = this.chains.get(key) ?? Promise.resolve();
    const next = previous.then(async () => {
      const item = await this.store.getMemory(this.scope, this.namespace, key);
      const value = item?.value;
      const stored: JsonObject =
        typeof value === 'object' && value !== null && !Array.isArray(value) && typeof value.w === 'object'
          ? structuredClone((value.w as JsonObject) ?? {})
          : {};
      for (const { idx, write } of encoded) {
        if (idx >= 0 && Object.hasOwn(stored, String(idx))) continue;
        setOwn(stored, String(idx), write as unknown as JsonObject);
      }
      await this.store.putMemory(this.scope, {
        namespace: this.namespace,
        key,
        value: { t: task_id, p: task_path, w: stored },
      });
    });
    const settled = next.catch(() => {});
    this.chains.set(key, settled);
    try {
      await next;
    } finally {
      if (this.chains.get(key) === settled) this.chains.delete(key);
    }
  }

  /** The writes against one checkpoint, in LangGraph's order: (task path, task id, idx). */
  async list(run: RunRef, checkpoint_id: string): Promise<CheckpointPendingWrite[]> {
    const rows: { key: ReturnType<typeof writesSortKey>; task: string; write: StoredWrite }[] = [];
    for await (const item of this.items(writesPrefix(run, checkpoint_id))) {
      const value = item.value;
      if (typeof value !== 'object' || value === null || Array.isArray(value)) continue;
      const task = typeof value.t === 'string' ? value.t : '';
      const path = typeof value.p === 'string' ? value.p : '';
      const w = value.w;
      if (typeof w !== 'object' || w === null || Array.isArray(w)) continue;
      for (const [idx, write] of Object.entries(w)) {
        rows.push({
          key: writesSortKey(path, task, Number(idx)),
          task,
          write: write as unknown as StoredWrite,
        });
      }
    }
    rows.sort((a, b) => compareWritesSortKeys(a.key, b.key));
    return Promise.all(
      rows.map(
        async ({ task, write }) =>
          [task, write.c, await decodeValue(this.serde, write.k, write.d)] as CheckpointPendingWrite,
      ),
    );
  }

  /** Removes every write item whose key starts with `prefix`. */
  async removeAll(prefix: string): Promise<void> {
    const keys: string[] = [];
    for await (const item of this.items(prefix)) keys.push(item.key);
    for (const key of keys) await this.store.deleteMemory(this.scope, this.namespace, key);
  }

  private async *items(prefix: string) {
    let cursor: string | null = null;
    do {
      const page = await this.store.listMemory(this.scope, this.namespace, { prefix, limit: 500, cursor });
      yield* page.items;
      cursor = page.next_cursor;
    } while (cursor !== null);
  }
}

function pack(encoded: { kind: string; data: JsonValue }): { k: string; d: JsonValue } {
  return { k: encoded.kind, d: encoded.data };
}
