/**
 * Append-only JSON-line files, fsync'd before a call returns: a service's idempotency index (the ledger of
 * what it did under each key, which its `lookup` reads) and its effect log (effects.ts).
 *
 * A process killed in the middle of an append can leave a torn last line; readers skip it, and the next
 * append starts on a fresh line so it never merges with the torn bytes.
 */

import { createHash } from 'node:crypto';
import { closeSync, fstatSync, fsyncSync, openSync, readFileSync, readSync, writeSync } from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';
import { dirname } from 'node:path';
import { canonicalJson, type JsonValue } from '../core/json.js';
import { makeFolder } from '../process/folders.js';

export interface LedgerEntry {
  /** The idempotency key the side effect was done for. */
  readonly key: string;
  /** Which tool or endpoint did it, for example `deploy.build` or `airline.book`. */
  readonly tool: string;
  /** sha256 of the canonical request, so a reused key with another request is detected. */
  readonly fingerprint: string;
  /** What the call answered; a replay answers exactly this. */
  readonly result: JsonValue;
}

/** sha256 (hex) of the canonical JSON of a value: equal values give equal fingerprints. */
export function fingerprintOf(value: JsonValue): string {
  return createHash('sha256').update(canonicalJson(value)).digest('hex');
}

function endsWithNewline(fd: number): boolean {
  const size = fstatSync(fd).size;
  if (size === 0) return true;
  const last = Buffer.alloc(1);
  readSync(fd, last, 0, 1, size - 1);
  return last[0] === 0x0a;
}

/** Appends one JSON value as a line and fsyncs it. Synchronous on purpose: once this returns, it is on disk. */
export function appendJsonLine(path: string, value: unknown): void {
  makeFolder(dirname(path), 'for the ledger');
  const fd = openSync(path, 'a+');
  try {
    const line = `${endsWithNewline(fd) ? '' : '\n'}${JSON.stringify(value)}\n`;
    writeSync(fd, line);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Appends one entry and fsyncs it. */
export function appendLedger(path: string, entry: LedgerEntry): void {
  appendJsonLine(path, entry);
}

/**
 * Appends batches of entries to one ledger, each with one write and one fdatasync (group commit), without
 * blocking the event loop: once `append` resolves, every line of the batch is on disk. The file stays open
 * between batches (an open, stat and close per batch cost a thread-pool hop each); the torn-line rule of
 * appendLedger is applied when it is opened, and it is opened again after a failed write. One batch at a
 * time: the caller queues.
 */
export class LedgerAppender {
  readonly path: string;
  private file: FileHandle | null = null;

  constructor(path: string) {
    this.path = path;
  }

  private async opened(): Promise<{ file: FileHandle; lead: string }> {
    if (this.file !== null) return { file: this.file, lead: '' };
    makeFolder(dirname(this.path), 'for the ledger');
    const file = await open(this.path, 'a+');
    try {
      const { size } = await file.stat();
      let lead = '';
      if (size > 0) {
        const last = Buffer.alloc(1);
        await file.read(last, 0, 1, size - 1);
        if (last[0] !== 0x0a) lead = '\n';
      }
      this.file = file;
      return { file, lead };
    } catch (error) {
      await file.close().catch(() => undefined);
      throw error;
    }
  }

  async append(entries: readonly object[]): Promise<void> {
    if (entries.length === 0) return;
    const { file, lead } = await this.opened();
    try {
      await file.write(`${lead}${entries.map((entry) => `${JSON.stringify(entry)}\n`).join('')}`);
      await file.datasync();
    } catch (error) {
      // A partial write may have left a torn line: reopen (and re-check the tail) before the next batch.
      this.file = null;
      await file.close().catch(() => undefined);
      throw error;
    }
  }

  async close(): Promise<void> {
    const file = this.file;
    this.file = null;
    await file?.close();
  }
}

function isEntry(value: unknown): value is LedgerEntry {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return (
    typeof v.key === 'string' &&
    typeof v.tool === 'string' &&
    typeof v.fingerprint === 'string' &&
    'result' in v
  );
}

/** Every complete JSON line, oldest first, or null when the file does not exist; torn lines are skipped. */
export function readJsonLines(path: string): unknown[] | null {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
  const values: unknown[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    try {
      values.push(JSON.parse(line));
    } catch {
      // a torn line left by a killed writer: it never completed
    }
  }
  return values;
}

/** Every complete entry, oldest first. A missing file is an empty ledger; torn lines are skipped. */
export function readLedger(path: string): LedgerEntry[] {
  return (readJsonLines(path) ?? []).filter(isEntry);
}

/** The first entry recorded for `key`, or null. */
export function findLedgerEntry(path: string, key: string): LedgerEntry | null {
  return readLedger(path).find((entry) => entry.key === key) ?? null;
}
