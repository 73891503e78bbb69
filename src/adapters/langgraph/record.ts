/**
 * One LangGraph checkpoint as one store checkpoint: channels hold the channel values (one per channel, in
 * the store's content-addressed codec), metadata holds everything else in the saver's format.
 */
import type { Checkpoint as LgCheckpoint, SerializerProtocol } from '@langchain/langgraph-checkpoint';
import type { JsonObject, JsonValue } from '../../core/json.js';
import type { Checkpoint } from '../../core/model.js';
import { decodeValue, encodeValue, type Kind, packed, setOwn, unpack } from './codec.js';
import type { RunRef } from './keys.js';

export const LABEL = 'langgraph';
const FORMAT = 1;

/** What a put needs to know of a stored checkpoint to carry unchanged channels into the next one. */
export interface ChannelState {
  readonly versions: Readonly<Record<string, string | number>>;
  readonly kinds: Readonly<Record<string, Kind>>;
  readonly channels: Readonly<JsonObject>;
}

/** A stored checkpoint, read back: its LangGraph identity plus the parts still in stored form. */
export interface StoredRecord extends ChannelState {
  readonly run: RunRef;
  readonly checkpoint_id: string;
  readonly parent_checkpoint_id: string | null;
  readonly checkpoint: JsonValue;
  readonly metadata: JsonValue;
}

function object(value: JsonValue | undefined): JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? value : {};
}

function stringMap<T extends JsonValue>(value: JsonValue | undefined, ok: (v: JsonValue) => v is T) {
  const out: Record<string, T> = {};
  for (const [key, entry] of Object.entries(object(value))) if (ok(entry)) setOwn(out, key, entry);
  return out;
}

const isVersion = (v: JsonValue): v is string | number => typeof v === 'string' || typeof v === 'number';
const isString = (v: JsonValue): v is string => typeof v === 'string';

/** Null when the store checkpoint was not written by this saver. */
export function readRecord(checkpoint: Checkpoint): StoredRecord | null {
  const meta = checkpoint.metadata;
  if (checkpoint.label !== LABEL || meta.lg !== FORMAT) return null;
  if (typeof meta.thread_id !== 'string' || typeof meta.checkpoint_ns !== 'string') return null;
  if (typeof meta.checkpoint_id !== 'string') return null;
  return {
    run: { thread_id: meta.thread_id, checkpoint_ns: meta.checkpoint_ns },
    checkpoint_id: meta.checkpoint_id,
    parent_checkpoint_id: typeof meta.parent_checkpoint_id === 'string' ? meta.parent_checkpoint_id : null,
    checkpoint: meta.checkpoint ?? null,
    metadata: meta.metadata ?? null,
    versions: stringMap(meta.versions, isVersion),
    kinds: stringMap(meta.kinds, isString),
    channels: checkpoint.channels,
  };
}

/** The channels of a new checkpoint, and the kind of each, in stored form. */
export async function channelsToStore(
  serde: SerializerProtocol,
  checkpoint: LgCheckpoint,
  newVersions: Readonly<Record<string, string | number>>,
  parent: ChannelState | null,
): Promise<{ channels: JsonObject; kinds: Record<string, Kind> }> {
  const channels: JsonObject = {};
  const kinds: Record<string, Kind> = {};
  const values = checkpoint.channel_values as Record<string, unknown>;
  for (const [name, version] of Object.entries(checkpoint.channel_versions ?? {})) {
    if (Object.hasOwn(newVersions, name)) {
      // Changed in this step: its value is this checkpoint's. Absent means the channel is empty now.
      if (!Object.hasOwn(values, name) || values[name] === undefined) continue;
      const encoded = await encodeValue(serde, values[name]);
      setOwn(channels, name, encoded.data);
      setOwn(kinds, name, encoded.kind);
    } else if (
      parent !== null &&
      parent.versions[name] === version &&
      Object.hasOwn(parent.kinds, name) &&
      Object.hasOwn(parent.channels, name)
    ) {
      // Unchanged: the value stored for this version, carried from the parent (the store dedups it).
      setOwn(channels, name, parent.channels[name] as JsonValue);
      setOwn(kinds, name, parent.kinds[name] as Kind);
    }
  }
  return { channels, kinds };
}

export async function metadataToStore(
  serde: SerializerProtocol,
  run: RunRef,
  checkpoint: LgCheckpoint,
  metadata: unknown,
  parent_checkpoint_id: string | null,
  kinds: Record<string, Kind>,
): Promise<JsonObject> {
  const { channel_values: _values, ...rest } = checkpoint;
  const versions: JsonObject = {};
  for (const [name, version] of Object.entries(checkpoint.channel_versions ?? {})) {
    setOwn(versions, name, version);
  }
  return {
    lg: FORMAT,
    thread_id: run.thread_id,
    checkpoint_ns: run.checkpoint_ns,
    checkpoint_id: checkpoint.id,
    parent_checkpoint_id,
    checkpoint: packed(await encodeValue(serde, rest)),
    metadata: packed(await encodeValue(serde, metadata)),
    versions,
    kinds,
  };
}

/** The LangGraph checkpoint and metadata of a stored record. */
export async function decodeRecord(
  serde: SerializerProtocol,
  record: StoredRecord,
): Promise<{ checkpoint: LgCheckpoint; metadata: Record<string, unknown> }> {
  const base = unpack(record.checkpoint);
  const checkpoint = (await decodeValue(serde, base.kind, base.data)) as LgCheckpoint;
  const channel_values: Record<string, unknown> = {};
  for (const [name, kind] of Object.entries(record.kinds)) {
    if (!Object.hasOwn(record.channels, name)) continue;
    setOwn(channel_values, name, await decodeValue(serde, kind, record.channels[name] as JsonValue));
  }
  const meta = unpack(record.metadata);
  const metadata = (await decodeValue(serde, meta.kind, meta.data)) as Record<string, unknown>;
  return {
    checkpoint: {
      ...checkpoint,
      channel_values,
      channel_versions: checkpoint.channel_versions ?? {},
      versions_seen: checkpoint.versions_seen ?? {},
    },
    metadata,
  };
}
