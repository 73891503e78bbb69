/**
 * Checkpoint blobs a store wrote or read recently, by run and hash, so that reading a checkpoint fetches
 * only the blobs it does not hold (most often none: a run's latest checkpoint reads its own put's blobs).
 * For a checkpoint read alone (the latest, or one by id) the whole value of each channel is kept too, from
 * its second read (a value read once is handed out as built), so the next read of it is a copy instead of
 * a parse. A hash names its content, so an entry is never stale:
 * a blob removed from the database is only needed by checkpoints removed with it, and a blob cached from a
 * write that rolled back decodes, if a later row names its hash, to that row's value all the same. Bounded
 * by the characters held (a whole value counts its JSON text), least recently used dropped first.
 */
import { cloneJson, type JsonObject, type JsonValue } from '../../core/json.js';
import { RecentMap } from '../../core/recent-map.js';
import {
  type BlobRow,
  DamagedChainError,
  MAX_CHAIN_LINKS,
  type Manifest,
  MissingBlobError,
} from './checkpoint-codec.js';

/** What the cache holds at most, in characters of blob text (about that many bytes of JSON). */
export const BLOB_CACHE_CHARS = 8 * 1024 * 1024;

/** Runs whose last manifest is remembered (`noteManifest`). */
const MANIFEST_RUNS = 10_000;

/** A channel's decoded whole value and the length of its JSON text. */
export interface Whole {
  readonly value: JsonValue;
  readonly chars: number;
}

/** Whole values found kept during one read, by hash. */
export type Wholes = Map<string, Whole>;

interface Entry {
  readonly blob: BlobRow;
  /** The channel value this hash names, decoded (through its bases): shared, never handed out. */
  whole?: JsonValue;
  /** The JSON text length of `whole` (0 while it is not kept). */
  wholeChars: number;
  /** A read alone built this hash's value once and kept it not: the next such read keeps it. */
  decoded?: true;
}

export class BlobCache {
  /** Bounded by the characters they hold (`trim`), not by their count. */
  private readonly entries = new RecentMap<string, Entry>(Number.POSITIVE_INFINITY);
  private readonly manifests = new RecentMap<string, Manifest>(MANIFEST_RUNS);
  private chars = 0;

  constructor(private readonly maxChars = BLOB_CACHE_CHARS) {}

  /** Keeps `blobs` of the run `run` (a key naming its tenant, user and run). */
  add(run: string, blobs: Iterable<BlobRow>): void {
    if (this.maxChars === 0) return;
    for (const blob of blobs) {
      if (blob.data.length > this.maxChars) continue;
      const key = run + blob.hash;
      if (this.entries.use(key) !== undefined) continue;
      this.entries.set(key, { blob, wholeChars: 0 });
      this.chars += blob.data.length;
    }
    this.trim();
  }

  /**
   * Puts into `into` the blobs of the chains of `hashes` held here (each chain followed through its bases);
   * returns the hashes where a chain leaves the cache: their blobs and those under them are to be read.
   * With `wholes` (for `decodeOne`), a hash whose whole value is kept needs nothing more: the value is put
   * there (so a later eviction cannot take it from this read).
   */
  collect(run: string, hashes: Iterable<string>, into: Map<string, BlobRow>, wholes?: Wholes): string[] {
    const missing: string[] = [];
    for (const start of hashes) {
      let hash: string | null = start;
      while (hash !== null && !into.has(hash)) {
        const key: string = run + hash;
        const entry = this.entries.use(key);
        if (entry === undefined) {
          missing.push(hash);
          break;
        }
        into.set(hash, entry.blob);
        if (wholes !== undefined && entry.whole !== undefined) {
          wholes.set(hash, { value: entry.whole, chars: entry.wholeChars });
          break;
        }
        hash = entry.blob.base;
      }
    }
    return missing;
  }

  /** Remembers the manifest of the checkpoint of `run` this store wrote or read last. */
  noteManifest(run: string, manifest: Manifest): void {
    if (this.maxChars === 0) return;
    this.manifests.set(run, manifest);
  }

  /**
   * The blobs held of the chains of the last manifest noted for `run` (with `wholes`, as `collect`): what a
   * read of the run that cannot name its manifests before it reads them (Redis) need not be sent.
   */
  heldOfLast(run: string, wholes?: Wholes): Map<string, BlobRow> {
    const held = new Map<string, BlobRow>();
    const manifest = this.manifests.get(run);
    if (manifest !== undefined) {
      for (const ref of Object.values(manifest)) {
        const chain = new Map<string, BlobRow>();
        // A chain counts only when held to its end (or to a kept whole value).
        if (this.collect(run, [ref.h], chain, wholes).length === 0)
          for (const [hash, blob] of chain) held.set(hash, blob);
      }
    }
    return held;
  }

  /**
   * One checkpoint's channels, each a copy of its whole value: from `wholes` (what `collect` found kept),
   * else decoded from `blobs` (what it found, and the blobs read for what it missed) and kept.
   */
  decodeOne(
    run: string,
    manifest: Manifest,
    blobs: ReadonlyMap<string, BlobRow>,
    wholes: Wholes,
  ): JsonObject {
    const out: JsonObject = {};
    for (const [name, ref] of Object.entries(manifest)) {
      const kept = this.kept(run, ref.h, wholes);
      const value = kept === undefined ? this.build(run, ref.h, blobs, wholes) : cloneJson(kept.value);
      Object.defineProperty(out, name, { value, enumerable: true, writable: true, configurable: true });
    }
    return out;
  }

  /** False when the cache keeps nothing (a size of 0). */
  get enabled(): boolean {
    return this.maxChars > 0;
  }

  /** Characters held (for tests and stats). */
  get size(): number {
    return this.chars;
  }

  /**
   * The whole value of `hash`, not kept: built from its chain in one pass down to a whole value (stored
   * whole, or kept) and one back up, each append parsed once into one array, and kept only from its second
   * building. A value built once (a run read back after a restart, one of many runs read in turn) is
   * handed out as built, without a copy, and the cache holds its blobs alone. The values below it on its
   * chain are not kept (a checkpoint read alone is mostly a run's latest, and they would hold the chain's
   * elements once per link). What it returns is the caller's: a copy where a part of it is held here.
   */
  private build(run: string, hash: string, blobs: ReadonlyMap<string, BlobRow>, wholes: Wholes): JsonValue {
    const appends: BlobRow[] = [];
    let at = hash;
    let base: Whole | undefined;
    let fresh = false;
    while (base === undefined) {
      const blob = blobs.get(at) ?? this.entries.get(run + at)?.blob;
      if (blob === undefined) throw new MissingBlobError(at);
      if (blob.base === null) {
        base = { value: JSON.parse(blob.data) as JsonValue, chars: blob.data.length };
        fresh = true;
      } else {
        if (appends.push(blob) > MAX_CHAIN_LINKS) throw new DamagedChainError(hash);
        at = blob.base;
        base = this.kept(run, at, wholes);
      }
    }
    let value = base.value;
    let chars = base.chars;
    if (appends.length > 0) {
      // A kept value is shared: its array is copied (its items stay shared, like the value kept here).
      const items = fresh ? (value as JsonValue[]) : (value as JsonValue[]).slice();
      for (let i = appends.length - 1; i >= 0; i--) {
        const blob = appends[i] as BlobRow;
        for (const item of JSON.parse(blob.data) as JsonValue[]) items.push(item);
        chars += blob.data.length;
      }
      value = items;
    }
    // Kept only beside its blob, only while it fits, and from its second building.
    const entry = this.entries.get(run + hash);
    if (entry === undefined || chars > this.maxChars || entry.decoded === undefined) {
      if (entry !== undefined) entry.decoded = true;
      return fresh ? value : cloneJson(value);
    }
    entry.whole = value;
    entry.wholeChars = chars;
    this.chars += chars;
    this.trim();
    return cloneJson(value);
  }

  /** The whole value of `hash` found in this read or kept beside its blob. */
  private kept(run: string, hash: string, wholes: Wholes): Whole | undefined {
    const known = wholes.get(hash);
    if (known !== undefined) return known;
    const entry = this.entries.get(run + hash);
    return entry?.whole === undefined ? undefined : { value: entry.whole, chars: entry.wholeChars };
  }

  /** Drops the least recently used entries while over the bound. */
  private trim(): void {
    while (this.chars > this.maxChars) {
      const dropped = this.entries.dropOldest();
      if (dropped === undefined) return;
      this.chars -= dropped[1].blob.data.length + dropped[1].wholeChars;
    }
  }
}
