/**
 * Checkpoint blobs a store wrote or read recently, by run and hash, so that reading a checkpoint fetches
 * only the blobs it does not hold (most often none: a run's latest checkpoint reads its own put's blobs).
 * For a checkpoint read alone (the latest, or one by id) the whole value of each channel is kept too, so
 * the next read of it is a copy instead of a parse. A hash names its content, so an entry is never stale:
 * a blob removed from the database is only needed by checkpoints removed with it, and a blob cached from a
 * write that rolled back decodes, if a later row names its hash, to that row's value all the same. Bounded
 * by the characters held (a whole value counts its JSON text), least recently used dropped first.
 */
import { cloneJson, type JsonObject, type JsonValue } from '../../core/json.js';
import { type BlobRow, type Manifest, MissingBlobError } from './checkpoint-codec.js';

/** What the cache holds at most, in characters of blob text (about that many bytes of JSON). */
export const BLOB_CACHE_CHARS = 8 * 1024 * 1024;

interface Entry {
  readonly blob: BlobRow;
  /** The channel value this hash names, decoded (through its bases): shared, never handed out. */
  whole?: JsonValue;
  /** The JSON text length of `whole` (0 while it is not kept). */
  wholeChars: number;
}

export class BlobCache {
  private readonly entries = new Map<string, Entry>();
  private chars = 0;

  constructor(private readonly maxChars = BLOB_CACHE_CHARS) {}

  /** Keeps `blobs` of the run `run` (a key naming its tenant, user and run). */
  add(run: string, blobs: Iterable<BlobRow>): void {
    if (this.maxChars === 0) return;
    for (const blob of blobs) {
      if (blob.data.length > this.maxChars) continue;
      const key = run + blob.hash;
      const held = this.entries.get(key);
      if (held !== undefined) {
        this.touch(key, held);
        continue;
      }
      this.entries.set(key, { blob, wholeChars: 0 });
      this.chars += blob.data.length;
    }
    this.trim();
  }

  /**
   * Puts into `into` the blobs of the chains of `hashes` held here (each chain followed through its bases);
   * returns the hashes where a chain leaves the cache: their blobs and those under them are to be read.
   * With `wholes`, a hash whose whole value is kept needs nothing more (for `decodeOne`).
   */
  collect(run: string, hashes: Iterable<string>, into: Map<string, BlobRow>, wholes = false): string[] {
    const missing: string[] = [];
    for (const start of hashes) {
      let hash: string | null = start;
      while (hash !== null && !into.has(hash)) {
        const key: string = run + hash;
        const entry = this.entries.get(key);
        if (entry === undefined) {
          missing.push(hash);
          break;
        }
        this.touch(key, entry);
        into.set(hash, entry.blob);
        hash = wholes && entry.whole !== undefined ? null : entry.blob.base;
      }
    }
    return missing;
  }

  /**
   * One checkpoint's channels, each a copy of the whole value kept here, decoded from `blobs` (and kept)
   * when it is not. `blobs` holds what `collect` found with `wholes`, and the blobs read for what it missed.
   */
  decodeOne(run: string, manifest: Manifest, blobs: ReadonlyMap<string, BlobRow>): JsonObject {
    const out: JsonObject = {};
    for (const [name, ref] of Object.entries(manifest)) {
      const value = cloneJson(this.whole(run, ref.h, blobs).value);
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

  private whole(
    run: string,
    hash: string,
    blobs: ReadonlyMap<string, BlobRow>,
  ): { value: JsonValue; chars: number } {
    const key = run + hash;
    const entry = this.entries.get(key);
    if (entry?.whole !== undefined) return { value: entry.whole, chars: entry.wholeChars };
    const blob = blobs.get(hash) ?? entry?.blob;
    if (blob === undefined) throw new MissingBlobError(hash);
    let value: JsonValue;
    let chars: number;
    if (blob.base === null) {
      value = JSON.parse(blob.data) as JsonValue;
      chars = blob.data.length;
    } else {
      const base = this.whole(run, blob.base, blobs);
      value = (base.value as JsonValue[]).concat(JSON.parse(blob.data) as JsonValue[]);
      chars = base.chars + blob.data.length;
    }
    // Kept only beside its blob, and only while it fits.
    if (entry !== undefined && this.entries.get(key) === entry && chars <= this.maxChars) {
      entry.whole = value;
      entry.wholeChars = chars;
      this.chars += chars;
      this.trim();
    }
    return { value, chars };
  }

  private touch(key: string, entry: Entry): void {
    this.entries.delete(key);
    this.entries.set(key, entry);
  }

  private trim(): void {
    while (this.chars > this.maxChars) {
      const [oldest, entry] = this.entries.entries().next().value as [string, Entry];
      this.entries.delete(oldest);
      this.chars -= entry.blob.data.length + entry.wholeChars;
    }
  }
}
