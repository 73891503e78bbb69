/**
 * One LangGraph checkpoint as one store checkpoint: channels hold the channel values (one per channel, in
 * the store's content-addressed codec), metadata holds everything else in the saver's format.
 */
import type { Checkpoint as LgCheckpoint, SerializerProtocol } from '@langchain/langgraph-checkpoint';
import type { JsonObject, JsonValue } from '../../core/json.js';
import type { Checkpoint } from '../../core/model.js';
import { decodeValue, encodeValue, type Kind, packed, setOwn, unpack } from './codec.js';
import type { Reuse } from './jsonplus.js';
import type { RunRef } from './keys.js';

export const LABEL = 'langgraph';
const FORMAT = 1;

/**
 * What a put needs to know of its parent to carry unchanged channels: each channel's version and kind (a
 * channel without a kind was not stored). No values: the saver keeps no reference to a value it was given
 * or handed out.
 */
export interface ChannelState {
  readonly versions: Readonly<Record<string, string | number>>;
  readonly kinds: Readonly<Record<string, Kind>>;
}

/** A stored checkpoint, read back: its LangGraph identity plus the parts still in stored form. */
export interface StoredRecord extends ChannelState {
  readonly channels: Readonly<JsonObject>;
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

/**
 * The channels of a new checkpoint, and the kind of each, in stored form. A channel changed in this step
 * (in `newVersions`) is stored from its value; an unchanged one is carried when the parent stored it at
 * the same version: from the checkpoint's own value when it has one (a version names one value), else from
 * the parent's stored value (`parentChannels`, read only then). `lenient` as for `encodeValue`.
 */
export async function channelsToStore(
  serde: SerializerProtocol,
  checkpoint: LgCheckpoint,
  newVersions: Readonly<Record<string, string | number>>,
  parent: ChannelState | null,
  parentChannels: () => Promise<Readonly<JsonObject> | null>,
  lenient: boolean,
): Promise<{ channels: JsonObject; kinds: Record<string, Kind> }> {
  const channels: JsonObject = {};
  const kinds: Record<string, Kind> = {};
  const values = checkpoint.channel_values as Record<string, unknown>;
  const has = (name: string) => Object.hasOwn(values, name) && values[name] !== undefined;
  for (const [name, version] of Object.entries(checkpoint.channel_versions ?? {})) {
    const changed = Object.hasOwn(newVersions, name);
    const carried =
      !changed && parent !== null && parent.versions[name] === version && Object.hasOwn(parent.kinds, name);
    if ((changed || carried) && has(name)) {
      // Absent in a changed channel means the channel is empty now.
      const encoded = await encodeValue(serde, values[name], lenient);
      setOwn(channels, name, encoded.data);
      setOwn(kinds, name, encoded.kind);
    } else if (carried) {
      const stored = await parentChannels();
      if (stored === null || !Object.hasOwn(stored, name)) continue;
      // The value stored for this version, carried from the parent (the store dedups it).
      setOwn(channels, name, stored[name] as JsonValue);
      setOwn(kinds, name, (parent as ChannelState).kinds[name] as Kind);
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
  lenient: boolean,
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
    checkpoint: packed(await encodeValue(serde, rest, lenient)),
    metadata: packed(await encodeValue(serde, metadata, lenient)),
    versions,
    kinds,
  };
}

/** The LangGraph checkpoint and metadata of a stored record; `reuse` as for `decodeValue`. */
export async function decodeRecord(
  serde: SerializerProtocol,
  record: StoredRecord,
  reuse: Reuse,
): Promise<{ checkpoint: LgCheckpoint; metadata: Record<string, unknown> }> {
  const base = unpack(record.checkpoint);
  const checkpoint = (await decodeValue(serde, base.kind, base.data, reuse)) as LgCheckpoint;
  const channel_values: Record<string, unknown> = {};
  for (const [name, kind] of Object.entries(record.kinds)) {
    if (!Object.hasOwn(record.channels, name)) continue;
    const data = record.channels[name] as JsonValue;
    setOwn(channel_values, name, await decodeValue(serde, kind, data, reuse));
  }
  const meta = unpack(record.metadata);
  const metadata = (await decodeValue(serde, meta.kind, meta.data, reuse)) as Record<string, unknown>;
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
