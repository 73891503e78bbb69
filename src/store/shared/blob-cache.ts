/**
 * Checkpoint blobs a store wrote or read recently, by run and hash, so that reading a checkpoint fetches
 * only the blobs it does not hold (most often none: a run's latest checkpoint reads its own put's blobs).
 * A hash names its content, so an entry is never stale: a blob removed from the database is only needed by
 * checkpoints removed with it, and a blob cached from a write that rolled back decodes, if a later row
 * names its hash, to that row's value all the same. Bounded by the characters held, least recently used
 * dropped first.
 */
import type { BlobRow } from './checkpoint-codec.js';

/** What the cache holds at most, in characters of blob text (about that many bytes of JSON). */
export const BLOB_CACHE_CHARS = 8 * 1024 * 1024;

export class BlobCache {
  private readonly rows = new Map<string, BlobRow>();
  private chars = 0;

  constructor(private readonly maxChars = BLOB_CACHE_CHARS) {}

  /** Keeps `blobs` of the run `run` (a key naming its tenant, user and run). */
  add(run: string, blobs: Iterable<BlobRow>): void {
    for (const blob of blobs) {
      if (blob.data.length > this.maxChars) continue;
      const key = run + blob.hash;
      const held = this.rows.get(key);
      if (held !== undefined) {
        this.rows.delete(key);
        this.chars -= held.data.length;
      }
      this.rows.set(key, blob);
      this.chars += blob.data.length;
    }
    while (this.chars > this.maxChars) {
      const [oldest, blob] = this.rows.entries().next().value as [string, BlobRow];
      this.rows.delete(oldest);
      this.chars -= blob.data.length;
    }
  }

  /**
   * Puts into `into` the blobs of the chains of `hashes` held here (each chain followed through its bases);
   * returns the hashes where a chain leaves the cache: their blobs and those under them are to be read.
   */
  collect(run: string, hashes: Iterable<string>, into: Map<string, BlobRow>): string[] {
    const missing: string[] = [];
    for (const start of hashes) {
      let hash: string | null = start;
      while (hash !== null && !into.has(hash)) {
        const key: string = run + hash;
        const blob = this.rows.get(key);
        if (blob === undefined) {
          missing.push(hash);
          break;
        }
        this.rows.delete(key);
        this.rows.set(key, blob);
        into.set(hash, blob);
        hash = blob.base;
      }
    }
    return missing;
  }

  /** Characters held (for tests and stats). */
  get size(): number {
    return this.chars;
  }

  clear(): void {
    this.rows.clear();
    this.chars = 0;
  }
}
