/**
 * A LangGraph.js checkpointer over any agentstate store: `new AgentStateSaver({ store, tenant_id, user_id })`
 * wherever a graph takes a `checkpointer`. A (thread_id, checkpoint_ns) pair is one checkpoint run of the
 * configured tenant and user; every read goes through that scope, so two savers of different users over one
 * store never see each other's threads.
 */
import { isDeepStrictEqual } from 'node:util';
import type { RunnableConfig } from '@langchain/core/runnables';
import {
  BaseCheckpointSaver,
  type ChannelVersions,
  type CheckpointListOptions,
  type CheckpointMetadata,
  type CheckpointTuple,
  type Checkpoint as LgCheckpoint,
  type PendingWrite,
  type SerializerProtocol,
} from '@langchain/langgraph-checkpoint';
import { isAgentStateError } from '../../core/errors.js';
import type { JsonObject } from '../../core/json.js';
import type { Checkpoint } from '../../core/model.js';
import { RecentMap } from '../../core/recent-map.js';
import { type OpenStoreOptions, openStore } from '../../store/open.js';
import type { NewCheckpoint, Scope, StateStore } from '../../store/types.js';
import { checkScope, runOf, stepOf, writeTarget } from './config.js';
import { isJsonPlus } from './jsonplus.js';
import { type RunRef, runId, storeCheckpointId } from './keys.js';
import {
  type ChannelState,
  channelsToStore,
  LABEL,
  metadataToStore,
  readRecord,
  type StoredRecord,
} from './record.js';
import { ThreadIndex } from './threads.js';
import { toTuple } from './tuple.js';
import { WritesStore } from './writes.js';

export interface AgentStateSaverOptions {
  /** The store to keep checkpoints in (any adapter). The saver does not close it. */
  readonly store: StateStore;
  readonly tenant_id: string;
  readonly user_id: string;
  /** Serializer of channel values, writes and metadata. Default: LangGraph's JsonPlusSerializer. */
  readonly serde?: SerializerProtocol;
  /** Prefix of the memory namespaces that hold pending writes and the thread index. Default 'langgraph'. */
  readonly namespace?: string;
  /** Checkpoints remembered per saver to carry unchanged channels without a read. Default 256. */
  readonly cacheSize?: number;
}

export class AgentStateSaver extends BaseCheckpointSaver {
  readonly store: StateStore;
  readonly scope: Scope;
  private readonly writes: WritesStore;
  private readonly threads: ThreadIndex;
  private readonly recent: RecentMap<string, ChannelState>;
  private owned = false;
  private lastId: (RunRef & { readonly lgId: string; readonly id: string }) | null = null;

  constructor(options: AgentStateSaverOptions) {
    super(options.serde);
    this.scope = checkScope(options);
    this.store = options.store;
    const namespace = options.namespace ?? 'langgraph';
    this.writes = new WritesStore(this.store, this.scope, `${namespace}.writes`, this.serde);
    this.threads = new ThreadIndex(this.store, this.scope, `${namespace}.threads`);
    this.recent = new RecentMap(options.cacheSize ?? 256);
  }

  /** Opens the store at `url` (see `openStore`) and a saver that closes it on `close()`. */
  static async open(
    url: string,
    options: Omit<AgentStateSaverOptions, 'store'> & { readonly storeOptions?: OpenStoreOptions },
  ): Promise<AgentStateSaver> {
    const store = await openStore(url, options.storeOptions);
    try {
      const saver = new AgentStateSaver({ ...options, store });
      saver.owned = true;
      return saver;
    } catch (error) {
      await store.close();
      throw error;
    }
  }

  /** Closes the store when this saver opened it (`AgentStateSaver.open`). */
  async close(): Promise<void> {
    if (this.owned) await this.store.close();
  }

  async getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    const run = runOf(config, false);
    if (run === null) return undefined;
    const id = config.configurable?.checkpoint_id;
    const named = typeof id === 'string' && id !== '' ? id : null;
    // A named checkpoint's pending writes are read beside it (a round trip fewer on a server).
    const [stored, namedWrites] = await Promise.all([
      named === null
        ? this.store.latestCheckpoint(this.scope, runId(run))
        : this.store.getCheckpoint(this.scope, storeCheckpointId(this.scope, run, named)),
      // Its failure fails nothing yet: without the checkpoint there is nothing to read writes for.
      named === null ? null : this.writes.list(run, named).catch(() => null),
    ]);
    const record = stored === null ? null : this.remember(stored);
    if (record === null) return undefined;
    const pending =
      namedWrites !== null && record.checkpoint_id === named
        ? namedWrites
        : await this.writes.list(run, record.checkpoint_id);
    return toTuple(this.serde, record, pending, this.writes, 'owned');
  }

  async *list(config: RunnableConfig, options: CheckpointListOptions = {}): AsyncGenerator<CheckpointTuple> {
    const { limit, before, filter } = options;
    if (limit !== undefined && limit <= 0) return;
    const conf = (config.configurable ?? {}) as Record<string, unknown>;
    const runs = await this.runsFor(conf);
    const beforeId = before?.configurable?.checkpoint_id as string | undefined;
    const only =
      typeof conf.checkpoint_id === 'string' && conf.checkpoint_id !== '' ? conf.checkpoint_id : null;
    const accept = (record: StoredRecord) =>
      (only === null || record.checkpoint_id === only) &&
      (beforeId === undefined || record.checkpoint_id < beforeId);
    if (runs.length === 1) {
      let count = 0;
      for await (const tuple of this.history(runs[0] as RunRef, accept, filter, before, limit)) {
        yield tuple;
        count += 1;
        if (limit !== undefined && count >= limit) return;
      }
      return;
    }
    // Across runs: the newest first by checkpoint id, as LangGraph's SQL savers order them.
    const all: CheckpointTuple[] = [];
    for (const run of runs) {
      for await (const tuple of this.history(run, accept, filter, before, limit)) all.push(tuple);
    }
    all.sort((a, b) => {
      const x = String(a.checkpoint.id);
      const y = String(b.checkpoint.id);
      return x < y ? 1 : x > y ? -1 : 0;
    });
    yield* limit === undefined ? all : all.slice(0, limit);
  }

  async put(
    config: RunnableConfig,
    checkpoint: LgCheckpoint,
    metadata: CheckpointMetadata,
    newVersions: ChannelVersions,
  ): Promise<RunnableConfig> {
    const run = runOf(config, true) as RunRef;
    const parentId = config.configurable?.checkpoint_id;
    const parentLgId = typeof parentId === 'string' && parentId !== '' ? parentId : null;
    const parentStoreId = parentLgId === null ? null : this.storeId(run, parentLgId);
    const parent = parentStoreId === null ? null : await this.parentOf(parentStoreId);
    let parentChannels: Promise<Readonly<JsonObject> | null> | undefined;
    const loadParent = () => {
      if (parent === null || parentStoreId === null) return Promise.resolve(null);
      parentChannels ??=
        parent.channels === null ? this.storedChannels(parentStoreId) : Promise.resolve(parent.channels);
      return parentChannels;
    };
    const id = this.storeId(run, checkpoint.id);
    const encode = async (lenient: boolean) => {
      const serde = this.serde;
      const state = parent?.state ?? null;
      const { channels, kinds } = await channelsToStore(
        serde,
        checkpoint,
        newVersions,
        state,
        loadParent,
        lenient,
      );
      const meta = await metadataToStore(serde, run, checkpoint, metadata, parentLgId, kinds, lenient);
      const input: NewCheckpoint = {
        id,
        run_id: runId(run),
        step: stepOf(metadata),
        parent_id: parentStoreId,
        label: LABEL,
        channels,
        metadata: meta,
      };
      return { input, state: { versions: meta.versions as ChannelState['versions'], kinds } };
    };
    await this.threads.add(run);
    try {
      let encoded = await encode(true);
      try {
        await this.store.putCheckpoint(this.scope, encoded.input);
      } catch (error) {
        // Values were checked leniently (see isJsonPlusPlain): what the store refused goes through the serializer.
        if (!isAgentStateError(error, 'invalid_request') || !isJsonPlus(this.serde)) throw error;
        encoded = await encode(false);
        await this.store.putCheckpoint(this.scope, encoded.input);
      }
      this.cache(id, encoded.state);
    } catch (error) {
      // A checkpoint id is written once: a retried put of the same checkpoint keeps the first.
      if (!isAgentStateError(error, 'conflict')) throw error;
    }
    return {
      configurable: {
        thread_id: run.thread_id,
        checkpoint_ns: run.checkpoint_ns,
        checkpoint_id: checkpoint.id,
      },
    };
  }

  async putWrites(
    config: RunnableConfig,
    writes: PendingWrite[],
    taskId: string,
    taskPath?: string,
  ): Promise<void> {
    const { run, checkpoint_id } = writeTarget(config);
    await this.writes.put(run, checkpoint_id, writes, taskId, taskPath ?? '');
  }

  async deleteThread(threadId: string): Promise<void> {
    const runs = await this.threads.ofThread(threadId);
    for (const run of runs) {
      await this.store.pruneCheckpoints(this.scope, runId(run), 0);
    }
    await this.writes.removeAll(this.threads.writesPrefixOf(threadId));
    await this.threads.remove(runs);
    this.recent.clear();
  }

  private async runsFor(conf: Record<string, unknown>): Promise<RunRef[]> {
    const thread = conf.thread_id;
    const ns = conf.checkpoint_ns;
    if (thread !== undefined && thread !== null && thread !== '' && typeof ns === 'string') {
      return [runOf({ configurable: conf }, true) as RunRef];
    }
    const all =
      thread === undefined || thread === null || thread === ''
        ? await this.threads.all()
        : await this.threads.ofThread(String(thread));
    return typeof ns === 'string' ? all.filter((run) => run.checkpoint_ns === ns) : all;
  }

  /** One run's checkpoints, newest first, that pass `accept` and `filter`. */
  private async *history(
    run: RunRef,
    accept: (record: StoredRecord) => boolean,
    filter: Record<string, unknown> | undefined,
    before: RunnableConfig | undefined,
    limit: number | undefined,
  ): AsyncGenerator<CheckpointTuple> {
    let cursor = await this.anchor(run, before);
    const pageSize = Math.min(Math.max(limit ?? 50, 1), 100);
    do {
      const page = await this.store.listCheckpoints(this.scope, runId(run), {
        limit: pageSize,
        before: cursor,
      });
      const records: StoredRecord[] = [];
      for (const stored of page.items) {
        const record = readRecord(stored);
        if (record !== null && accept(record)) records.push(record);
      }
      // One read of the page's pending writes. The page's records may share values: every tuple is built
      // before the first is handed out, and a part another tuple holds already is copied.
      const writes = await this.writes.listMany(
        run,
        records.map((record) => record.checkpoint_id),
      );
      const seen = new Set<object>();
      const tuples: CheckpointTuple[] = [];
      for (const record of records) {
        const pending = writes.get(record.checkpoint_id) ?? [];
        const tuple = await toTuple(this.serde, record, pending, this.writes, seen);
        if (filter === undefined || matches(tuple.metadata, filter)) tuples.push(tuple);
      }
      yield* tuples;
      cursor = page.next_cursor;
    } while (cursor !== null);
  }

  /** The store id to page back from, when `before` names a stored checkpoint of this same run. */
  private async anchor(run: RunRef, before: RunnableConfig | undefined): Promise<string | null> {
    const conf = before?.configurable;
    if (typeof conf?.checkpoint_id !== 'string') return null;
    if (conf.thread_id !== run.thread_id || (conf.checkpoint_ns ?? '') !== run.checkpoint_ns) return null;
    const id = storeCheckpointId(this.scope, run, conf.checkpoint_id);
    return (await this.store.getCheckpoint(this.scope, id)) === null ? null : id;
  }

  /** `storeCheckpointId`, remembering the last one: a put's parent is most often the previous put. */
  private storeId(run: RunRef, lgId: string): string {
    const last = this.lastId;
    if (last?.lgId === lgId && last.thread_id === run.thread_id && last.checkpoint_ns === run.checkpoint_ns) {
      return last.id;
    }
    const id = storeCheckpointId(this.scope, run, lgId);
    this.lastId = { ...run, lgId, id };
    return id;
  }

  /** The parent's versions and kinds (remembered, or read with its stored channels). */
  private async parentOf(
    id: string,
  ): Promise<{ state: ChannelState; channels: Readonly<JsonObject> | null } | null> {
    const cached = this.recent.get(id);
    if (cached !== undefined) return { state: cached, channels: null };
    const stored = await this.store.getCheckpoint(this.scope, id);
    const record = stored === null ? null : this.remember(stored);
    return record === null ? null : { state: record, channels: record.channels };
  }

  /** The stored channels of a checkpoint written by this saver, or null. */
  private async storedChannels(id: string): Promise<Readonly<JsonObject> | null> {
    const stored = await this.store.getCheckpoint(this.scope, id);
    const record = stored === null ? null : readRecord(stored);
    return record === null ? null : record.channels;
  }

  private remember(stored: Checkpoint): StoredRecord | null {
    const record = readRecord(stored);
    if (record !== null) this.cache(stored.id, record);
    return record;
  }

  private cache(id: string, state: ChannelState): void {
    this.recent.set(id, { versions: state.versions, kinds: state.kinds });
  }
}

function matches(metadata: CheckpointMetadata | undefined, filter: Record<string, unknown>): boolean {
  const meta = (metadata ?? {}) as Record<string, unknown>;
  return Object.entries(filter).every(([key, value]) => isDeepStrictEqual(meta[key], value));
}
