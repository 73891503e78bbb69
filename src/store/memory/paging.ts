/** Opaque cursors and pages: newest first by insertion order, or ascending by key for memory items. */
import { DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT, type Page, type PageQuery } from '../types.js';
import { copy, type Row } from './db.js';
import { fail, limit } from './validate.js';

type CursorBody = { readonly s: number } | { readonly k: string };

function encode(body: CursorBody): string {
  return Buffer.from(JSON.stringify(body), 'utf8').toString('base64url');
}

function decode(cursor: unknown): CursorBody {
  if (typeof cursor !== 'string' || cursor.length === 0) fail('cursor must be a string from next_cursor');
  try {
    const body = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    if (typeof body === 'object' && body !== null) {
      const s = (body as { s?: unknown }).s;
      const k = (body as { k?: unknown }).k;
      if (typeof s === 'number' && Number.isInteger(s)) return { s };
      if (typeof k === 'string') return { k };
    }
  } catch {
    // fall through to the refusal
  }
  return fail(`cursor ${JSON.stringify(cursor)} is not one this store handed out`);
}

export function pageLimit(query: PageQuery | undefined): number {
  return limit(query?.limit, 'limit', DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT);
}

/** Rows (already filtered by scope and query) as a page, newest first. */
export function newestFirst<T>(rows: Iterable<Row<T>>, query: PageQuery | undefined): Page<T> {
  const n = pageLimit(query);
  let before = Number.POSITIVE_INFINITY;
  if (query?.cursor !== undefined && query.cursor !== null) {
    const body = decode(query.cursor);
    if (!('s' in body)) fail('cursor does not belong to this list');
    before = body.s;
  }
  const sorted = [...rows].filter((row) => row.seq < before).sort((a, b) => b.seq - a.seq);
  const items = sorted.slice(0, n);
  const last = items.at(-1);
  const next_cursor = sorted.length > n && last !== undefined ? encode({ s: last.seq }) : null;
  return { items: items.map((row) => copy(row.rec)), next_cursor };
}

/** Records with a string key (already filtered), ascending by key. */
export function byKey<T>(
  records: Iterable<T>,
  keyOf: (record: T) => string,
  query: PageQuery | undefined,
): Page<T> {
  const n = pageLimit(query);
  let after: string | null = null;
  if (query?.cursor !== undefined && query.cursor !== null) {
    const body = decode(query.cursor);
    if (!('k' in body)) fail('cursor does not belong to this list');
    after = body.k;
  }
  const sorted = [...records]
    .filter((record) => after === null || keyOf(record) > after)
    .sort((a, b) => (keyOf(a) < keyOf(b) ? -1 : keyOf(a) > keyOf(b) ? 1 : 0));
  const items = sorted.slice(0, n);
  const last = items.at(-1);
  const next_cursor = sorted.length > n && last !== undefined ? encode({ k: keyOf(last) }) : null;
  return { items: items.map((record) => copy(record)), next_cursor };
}
