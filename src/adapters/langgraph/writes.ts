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
import type { MemoryItem } from '../../core/model.js';
import type { Scope, StateStore } from '../../store/types.js';
import { decodeValue, encodeValue, setOwn } from './codec.js';
import { type RunRef, runKey, writesKey, writesPrefix } from './keys.js';

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
      // The item read is this call's own copy: its writes are merged into it in place.
      const stored: JsonObject =
        typeof value === 'object' && value !== null && !Array.isArray(value) && typeof value.w === 'object'
          ? ((value.w as JsonObject) ?? {})
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
    const items = [];
    for await (const item of this.items(writesPrefix(run, checkpoint_id))) items.push(item);
    return this.decode(items);
  }

  /**
   * The writes against each of `ids` (checkpoints of one run), by id. When the ids share a prefix long
   * enough to bound what else it finds (LangGraph's ids are time-ordered: 8 characters span about 27 s),
   * one listing of that prefix reads them all; otherwise one listing per checkpoint.
   */
  async listMany(run: RunRef, ids: readonly string[]): Promise<Map<string, CheckpointPendingWrite[]>> {
    const out = new Map<string, CheckpointPendingWrite[]>();
    const prefixes = ids.map((id) => writesPrefix(run, id));
    const shared = commonPrefix(prefixes);
    if (ids.length < 2 || shared.length < runKey(run).length + 1 + MIN_SHARED_ID) {
      for (const id of ids) out.set(id, await this.list(run, id));
      return out;
    }
    const byPrefix = new Map<string, MemoryItem[]>(prefixes.map((prefix) => [prefix, []]));
    const start = runKey(run).length + 1;
    for await (const item of this.items(shared)) {
      const end = item.key.indexOf('/', start);
      byPrefix.get(item.key.slice(0, end + 1))?.push(item);
    }
    for (const [i, id] of ids.entries()) {
      out.set(id, await this.decode(byPrefix.get(prefixes[i] as string) ?? []));
    }
    return out;
  }

  private async decode(items: readonly MemoryItem[]): Promise<CheckpointPendingWrite[]> {
    const rows: { key: ReturnType<typeof writesSortKey>; task: string; write: StoredWrite }[] = [];
    for (const item of items) {
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
    // Items are read for this call alone: their values may become the writes themselves.
    return Promise.all(
      rows.map(
        async ({ task, write }) =>
          [task, write.c, await decodeValue(this.serde, write.k, write.d, 'owned')] as CheckpointPendingWrite,
      ),
    );
  }

  /** Removes every write item whose key starts with `prefix`. */
  async removeAll(prefix: string): Promise<void> {
    const keys: string[] = [];
    for await (const item of this.items(prefix)) keys.push(item.key);
    for (const key of keys) await this.store.deleteMemory(this.scope, this.namespace, key);
  }

  private async *items(prefix: string): AsyncGenerator<MemoryItem> {
    let cursor: string | null = null;
    do {
      const page = await this.store.listMemory(this.scope, this.namespace, { prefix, limit: 500, cursor });
      yield* page.items;
      cursor = page.next_cursor;
    } while (cursor !== null);
  }
}

/** Characters of the checkpoint ids a shared listing needs in common. */
const MIN_SHARED_ID = 8;

function commonPrefix(texts: readonly string[]): string {
  let shared = texts[0] ?? '';
  for (const text of texts) {
    let i = 0;
    while (i < shared.length && i < text.length && shared.charCodeAt(i) === text.charCodeAt(i)) i++;
    shared = shared.slice(0, i);
  }
  return shared;
}

function pack(encoded: { kind: string; data: JsonValue }): { k: string; d: JsonValue } {
  return { k: encoded.kind, d: encoded.data };
}
