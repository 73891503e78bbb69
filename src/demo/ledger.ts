/**
 * The downstream's own ledger: append-only JSON lines, fsync'd before a call returns, so a harness can count
 * from the file itself how many times each idempotency key's side effect really happened.
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

/** Appends one entry and fsyncs it. Synchronous on purpose: once this returns, the line is on disk. */
export function appendLedger(path: string, entry: LedgerEntry): void {
  makeFolder(dirname(path), 'for the ledger');
  const fd = openSync(path, 'a+');
  try {
    const line = `${endsWithNewline(fd) ? '' : '\n'}${JSON.stringify(entry)}\n`;
    writeSync(fd, line);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
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

  async append(entries: readonly LedgerEntry[]): Promise<void> {
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

/** Every complete entry, oldest first. A missing file is an empty ledger; torn lines are skipped. */
export function readLedger(path: string): LedgerEntry[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  const entries: LedgerEntry[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    try {
      const parsed: unknown = JSON.parse(line);
      if (isEntry(parsed)) entries.push(parsed);
    } catch {
      // a torn line left by a killed writer: it never completed, so it is not a side effect
    }
  }
  return entries;
}

/** The first entry recorded for `key`, or null. */
export function findLedgerEntry(path: string, key: string): LedgerEntry | null {
  return readLedger(path).find((entry) => entry.key === key) ?? null;
}

/** Per idempotency key, how many times its side effect really happened (1 is right; more is a duplicate). */
export function countSideEffects(ledgerPath: string): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const entry of readLedger(ledgerPath)) counts[entry.key] = (counts[entry.key] ?? 0) + 1;
  return counts;
}

/** How many keys had their side effect done more than once, and how many extra times in total. */
export function duplicateSideEffects(ledgerPath: string): { keys: string[]; extra: number } {
  const keys: string[] = [];
  let extra = 0;
  for (const [key, count] of Object.entries(countSideEffects(ledgerPath))) {
    if (count > 1) {
      keys.push(key);
      extra += count - 1;
    }
  }
  return { keys, extra };
}
