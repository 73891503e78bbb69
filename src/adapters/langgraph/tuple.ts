/** A stored record as LangGraph's CheckpointTuple, with its pending writes (and pending sends of v<4). */
import {
  type CheckpointPendingWrite,
  type CheckpointTuple,
  type Checkpoint as LgCheckpoint,
  maxChannelVersion,
  type SerializerProtocol,
  TASKS,
} from '@langchain/langgraph-checkpoint';
import type { Reuse } from './jsonplus.js';
import { decodeRecord, type StoredRecord } from './record.js';
import type { WritesStore } from './writes.js';

/**
 * `pendingWrites`: the record's writes, read by the caller (a page of history reads them at once).
 * `reuse` as for `decodeValue`.
 */
export async function toTuple(
  serde: SerializerProtocol,
  record: StoredRecord,
  pendingWrites: CheckpointPendingWrite[],
  writes: WritesStore,
  reuse: Reuse,
): Promise<CheckpointTuple> {
  const { checkpoint, metadata } = await decodeRecord(serde, record, reuse);
  const { run, parent_checkpoint_id: parent } = record;
  if (checkpoint.v < 4 && parent !== null) await migratePendingSends(checkpoint, record, writes, parent);
  const tuple: CheckpointTuple = {
    config: {
      configurable: {
        thread_id: run.thread_id,
        checkpoint_ns: run.checkpoint_ns,
        checkpoint_id: record.checkpoint_id,
      },
    },
    checkpoint,
    metadata: metadata as CheckpointTuple['metadata'],
    pendingWrites,
  };
  if (parent !== null) {
    tuple.parentConfig = {
      configurable: { thread_id: run.thread_id, checkpoint_ns: run.checkpoint_ns, checkpoint_id: parent },
    };
  }
  return tuple;
}

/** Checkpoints before format 4 kept sends as writes of the parent; LangGraph expects them as a channel. */
async function migratePendingSends(
  checkpoint: LgCheckpoint,
  record: StoredRecord,
  writes: WritesStore,
  parent: string,
): Promise<void> {
  const sends = (await writes.list(record.run, parent)).filter(([, channel]) => channel === TASKS);
  const values = checkpoint.channel_values as Record<string, unknown>;
  values[TASKS] = sends.map(([, , value]) => value);
  const versions = Object.values(checkpoint.channel_versions);
  checkpoint.channel_versions[TASKS] = versions.length > 0 ? maxChannelVersion(...versions) : 1;
}
