/**
 * How checkpoint channels are stored so that storage grows with what changed, not with the whole state.
 *
 * Each channel value is a blob addressed by a content hash, stored once per run (insert-or-ignore).
 * An array channel that extends the array of the previous checkpoint (the common case: a message list)
 * is stored as an append blob, holding only the new elements and the hash of its base. Its hash is a
 * chain hash over its elements, so it names the same content whether stored whole or as an append.
 * Chains are capped at MAX_CHAIN_DEPTH appends; the next write stores the array whole again.
 */
import { createHash } from 'node:crypto';
import type { JsonObject, JsonValue } from '../../core/json.js';

export const MAX_CHAIN_DEPTH = 16;

/** Where a channel's value of one checkpoint lives. `n` (array length) is set for arrays only. */
export interface ChannelRef {
  readonly h: string;
  readonly n?: number;
  /** Appends between this blob and a whole value: 0 when stored whole. */
  readonly d: number;
}

export type Manifest = Record<string, ChannelRef>;

/** One stored blob: a whole value (`base` null) or the JSON array of elements appended to `base`. */
export interface BlobRow {
  readonly hash: string;
  readonly base: string | null;
  readonly data: string;
}

const EMPTY_CHAIN = 'a:';

/** Sets an own property, also for the key `__proto__` (plain assignment would change the prototype). */
function setOwn<T>(target: Record<string, T>, key: string, value: T): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

function digest(text: string): string {
  return createHash('sha256').update(text).digest('base64url').slice(0, 27);
}

function chainStep(previous: string, elementJson: string): string {
  return `a${digest(`${previous}\n${elementJson}`)}`;
}

/** Encodes the channels of a new checkpoint against the manifest of the previous one of the same run. */
export function encodeChannels(
  channels: JsonObject,
  previous: Manifest | null,
): { manifest: Manifest; blobs: BlobRow[] } {
  const manifest: Manifest = {};
  const blobs: BlobRow[] = [];
  for (const [name, value] of Object.entries(channels)) {
    if (!Array.isArray(value)) {
      const data = JSON.stringify(value);
      const hash = `v${digest(data)}`;
      setOwn(manifest, name, { h: hash, d: 0 });
      const prior = previous !== null && Object.hasOwn(previous, name) ? previous[name] : undefined;
      if (prior?.h !== hash) blobs.push({ hash, base: null, data });
      continue;
    }
    const before = previous !== null && Object.hasOwn(previous, name) ? previous[name] : undefined;
    const elementJson = value.map((element) => JSON.stringify(element));
    let chain = EMPTY_CHAIN;
    let prefixMatches = false;
    const baseLength = before?.n ?? -1;
    for (let i = 0; i < elementJson.length; i++) {
      if (i === baseLength) prefixMatches = chain === before?.h;
      chain = chainStep(chain, elementJson[i] as string);
    }
    if (baseLength === elementJson.length) prefixMatches = chain === before?.h;
    const n = elementJson.length;
    if (before !== undefined && chain === before.h) {
      setOwn(manifest, name, { h: chain, n, d: before.d });
    } else if (before !== undefined && prefixMatches && baseLength > 0 && before.d < MAX_CHAIN_DEPTH) {
      setOwn(manifest, name, { h: chain, n, d: before.d + 1 });
      blobs.push({ hash: chain, base: before.h, data: `[${elementJson.slice(baseLength).join(',')}]` });
    } else {
      setOwn(manifest, name, { h: chain, n, d: 0 });
      blobs.push({ hash: chain, base: null, data: `[${elementJson.join(',')}]` });
    }
  }
  return { manifest, blobs };
}

/** Every blob hash a manifest needs, given the blobs already known (to walk append chains). */
export function manifestHashes(manifest: Manifest): string[] {
  return Object.values(manifest).map((ref) => ref.h);
}

/**
 * Rebuilds channel values. `blobs` must hold every blob of the manifests' chains (see `missingBases`).
 * A cache shared across calls of one read lets a history list parse each blob once; values built from
 * it may share unchanged sub-values between the checkpoints of that one read.
 */
export class ChannelDecoder {
  private readonly parsed = new Map<string, JsonValue>();
  constructor(private readonly blobs: ReadonlyMap<string, BlobRow>) {}

  decode(manifest: Manifest): JsonObject {
    const out: JsonObject = {};
    for (const [name, ref] of Object.entries(manifest)) setOwn(out, name, this.value(ref.h));
    return out;
  }

  private value(hash: string): JsonValue {
    const blob = this.blobs.get(hash);
    if (blob === undefined) throw new Error(`checkpoint blob ${hash} is missing`);
    if (blob.base === null) {
      let parsed = this.parsed.get(hash);
      if (parsed === undefined) {
        parsed = JSON.parse(blob.data) as JsonValue;
        this.parsed.set(hash, parsed);
        return parsed;
      }
      // A second use of the same whole value: hand out a fresh copy of its top level.
      return Array.isArray(parsed) ? parsed.slice() : JSON.parse(blob.data);
    }
    let appended = this.parsed.get(hash) as JsonValue[] | undefined;
    if (appended === undefined) {
      appended = JSON.parse(blob.data) as JsonValue[];
      this.parsed.set(hash, appended);
    }
    const base = this.value(blob.base) as JsonValue[];
    return base.concat(appended);
  }
}

/** The base hashes that `blobs` refers to but does not hold: fetch these and repeat until none remain. */
export function missingBases(blobs: ReadonlyMap<string, BlobRow>): string[] {
  const missing = new Set<string>();
  for (const blob of blobs.values()) {
    if (blob.base !== null && !blobs.has(blob.base)) missing.add(blob.base);
  }
  return [...missing];
}
