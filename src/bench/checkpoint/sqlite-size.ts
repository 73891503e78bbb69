/** Bytes a SQLite file holds: pages in use times the page size, read once every connection is closed. */
import { existsSync, statSync } from 'node:fs';
import Database from 'better-sqlite3';

export function sqliteUsedBytes(path: string): number {
  if (!existsSync(path)) return 0;
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    const pages = Number(db.pragma('page_count', { simple: true }));
    const free = Number(db.pragma('freelist_count', { simple: true }));
    const size = Number(db.pragma('page_size', { simple: true }));
    return (pages - free) * size;
  } finally {
    db.close();
  }
}

/** The file and its WAL on disk, for a cross-check of the page count. */
export function sqliteFileBytes(path: string): number {
  let total = 0;
  for (const file of [path, `${path}-wal`]) if (existsSync(file)) total += statSync(file).size;
  return total;
}

/** Measures a SQLite file against the baseline taken right after its schema was created. */
export function sqliteGrowth(path: string, baseline: { used: number; file: number }) {
  return {
    method: 'SQLite pages in use, growth over the empty schema',
    bytes: sqliteUsedBytes(path) - baseline.used,
    file_bytes: sqliteFileBytes(path) - baseline.file,
  };
}

export function sqliteBaseline(path: string): { used: number; file: number } {
  return { used: sqliteUsedBytes(path), file: sqliteFileBytes(path) };
}
