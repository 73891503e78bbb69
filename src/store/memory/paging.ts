/**
 * Pages: newest first by insertion order, or ascending by key for memory items. A cursor names the last
 * row of the page before, sealed with the store's key (shared/sealed-cursor.ts): it shows no insertion
 * counter and opens only for the list and scope that got it.
 */
import { type CursorPosition, openCursor, sealCursor } from '../shared/sealed-cursor.js';
import { DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT, type Page, type PageQuery, type ReadScope } from '../types.js';
import { copy, type Row } from './db.js';
import { fail, limit } from './validate.js';

/** The list a page belongs to, the caller it is for, and the store's cursor key. */
export interface CursorList {
  readonly key: Buffer;
  readonly name: string;
  readonly scope: ReadScope;
}

function position(list: CursorList, cursor: unknown): CursorPosition | null {
  if (cursor === undefined || cursor === null) return null;
  return openCursor(list.key, list.name, list.scope, cursor, fail);
}

export function pageLimit(query: PageQuery | undefined): number {
  return limit(query?.limit, 'limit', DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT);
}

/** Rows (already filtered by scope and query) as a page, newest first. */
export function newestFirst<T>(
  list: CursorList,
  rows: Iterable<Row<T>>,
  query: PageQuery | undefined,
): Page<T> {
  const n = pageLimit(query);
  let before = Number.POSITIVE_INFINITY;
  const at = position(list, query?.cursor);
  if (at !== null) {
    if (!('s' in at)) fail('cursor does not belong to this list');
    before = at.s;
  }
  const sorted = [...rows].filter((row) => row.seq < before).sort((a, b) => b.seq - a.seq);
  const items = sorted.slice(0, n);
  const last = items.at(-1);
  const next_cursor =
    sorted.length > n && last !== undefined
      ? sealCursor(list.key, list.name, list.scope, { s: last.seq })
      : null;
  return { items: items.map((row) => copy(row.rec)), next_cursor };
}

/** Records with a string key (already filtered), ascending by key. */
export function byKey<T>(
  list: CursorList,
  records: Iterable<T>,
  keyOf: (record: T) => string,
  query: PageQuery | undefined,
): Page<T> {
  const n = pageLimit(query);
  let after: string | null = null;
  const at = position(list, query?.cursor);
  if (at !== null) {
    if (!('k' in at)) fail('cursor does not belong to this list');
    after = at.k;
  }
  const sorted = [...records]
    .filter((record) => after === null || keyOf(record) > after)
    .sort((a, b) => (keyOf(a) < keyOf(b) ? -1 : keyOf(a) > keyOf(b) ? 1 : 0));
  const items = sorted.slice(0, n);
  const last = items.at(-1);
  const next_cursor =
    sorted.length > n && last !== undefined
      ? sealCursor(list.key, list.name, list.scope, { k: keyOf(last) })
      : null;
  return { items: items.map((record) => copy(record)), next_cursor };
}
