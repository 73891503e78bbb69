/**
 * LangGraph.js checkpoint savers driven through their public put/getTuple/list API with real checkpoints:
 * channel_values and channel_versions as a graph would write them, new_versions naming the changed channels.
 */
import { join } from 'node:path';
import type { RunnableConfig } from '@langchain/core/runnables';
import {
  type BaseCheckpointSaver,
  type Checkpoint,
  type CheckpointMetadata,
  type CheckpointTuple,
  emptyCheckpoint,
  MemorySaver,
  uuid6,
} from '@langchain/langgraph-checkpoint';
import { SqliteSaver } from '@langchain/langgraph-checkpoint-sqlite';
import Database from 'better-sqlite3';
import { sqliteBaseline, sqliteGrowth } from '../sqlite-size.js';
import type { OpenSystem, ReadBack, RunState, StoredBytes, SystemSpec } from '../system.js';
import { readBack } from '../system.js';

/** The checkpoint a graph writes after `step`: both channels changed, so both get a new version. */
export function graphCheckpoint(
  step: number,
  state: RunState,
): { checkpoint: Checkpoint; newVersions: Record<string, number> } {
  const version = step + 1;
  const checkpoint: Checkpoint = {
    ...emptyCheckpoint(),
    id: uuid6(step - 1),
    ts: new Date().toISOString(),
    channel_values: { messages: state.messages, task: state.task },
    channel_versions: { messages: version, task: version },
    versions_seen: { agent: { messages: step, task: step } },
  };
  return { checkpoint, newVersions: { messages: version, task: version } };
}

function fromTuple(tuple: CheckpointTuple | undefined): ReadBack {
  if (tuple === undefined) throw new Error('langgraph: no checkpoint found');
  const values = tuple.checkpoint.channel_values as { messages?: unknown };
  const metadata = tuple.metadata as { step?: unknown } | undefined;
  return readBack(metadata?.step, values.messages);
}

export function saverDriver(
  saver: BaseCheckpointSaver,
  tag: string,
  measure: () => Promise<StoredBytes>,
  close: () => Promise<void>,
): OpenSystem {
  const thread = (run: number) => `bench-${tag}-${run}`;
  const parents = new Map<number, string>();
  return {
    async put(run, step, state) {
      const parent = parents.get(run);
      const config: RunnableConfig = {
        configurable: {
          thread_id: thread(run),
          checkpoint_ns: '',
          ...(parent ? { checkpoint_id: parent } : {}),
        },
      };
      const { checkpoint, newVersions } = graphCheckpoint(step, state);
      const metadata: CheckpointMetadata = { source: step === 0 ? 'input' : 'loop', step, parents: {} };
      const saved = await saver.put(config, checkpoint, metadata, newVersions);
      parents.set(run, String(saved.configurable?.checkpoint_id));
    },
    async latest(run) {
      return fromTuple(await saver.getTuple({ configurable: { thread_id: thread(run), checkpoint_ns: '' } }));
    },
    async history(run, limit) {
      const out: ReadBack[] = [];
      for await (const tuple of saver.list(
        { configurable: { thread_id: thread(run), checkpoint_ns: '' } },
        { limit },
      )) {
        out.push(fromTuple(tuple));
      }
      return out;
    },
    storedBytes: measure,
    close,
  };
}

export const langgraphMemory: SystemSpec = {
  name: 'langgraph-memory',
  family: 'langgraph',
  backend: 'memory',
  async open(context) {
    const saver = new MemorySaver();
    return saverDriver(
      saver,
      context.tag,
      async () => {
        let bytes = 0;
        for (const namespaces of Object.values(saver.storage)) {
          for (const checkpoints of Object.values(namespaces)) {
            for (const [checkpoint, metadata] of Object.values(checkpoints))
              bytes += checkpoint.length + metadata.length;
          }
        }
        return { method: 'bytes of the serialized checkpoints and metadata it keeps', bytes };
      },
      async () => {},
    );
  },
};

export const langgraphSqlite: SystemSpec = {
  name: 'langgraph-sqlite',
  family: 'langgraph',
  backend: 'sqlite',
  async open(context) {
    const path = join(context.dir, 'langgraph.db');
    // SqliteSaver's setup() sets journal_mode=WAL and leaves synchronous alone, so it runs at better-sqlite3's
    // WAL default, NORMAL. We set the bench's setting explicitly (before setup, so it sticks) to match.
    const connect = async () => {
      const db = new Database(path);
      db.pragma('journal_mode = WAL');
      db.pragma(`synchronous = ${context.synchronous}`);
      const saver = new SqliteSaver(db);
      await saver.getTuple({ configurable: { thread_id: 'bench-setup' } }); // creates the tables
      return { db, saver };
    };
    (await connect()).db.close();
    const baseline = sqliteBaseline(path);
    const { db, saver } = await connect();
    const close = async () => {
      if (db.open) db.close();
    };
    return saverDriver(
      saver,
      context.tag,
      async () => {
        await close();
        return sqliteGrowth(path, baseline);
      },
      close,
    );
  },
};
