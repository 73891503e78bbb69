/**
 * Keyset paging: lists run newest first by write order (an increasing `ord` column), memory items ascending
 * by key; an opaque cursor names the last row of the page before.
 */
import { DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT, type Page, type PageQuery } from '../types.js';
import type { SqlContext } from './context.js';
import type { SqlRow } from './executor.js';

type CursorBody = { readonly s: number } | { readonly k: string };

function encode(body: CursorBody): string {
  return Buffer.from(JSON.stringify(body), 'utf8').toString('base64url');
}

function decode(ctx: SqlContext, cursor: unknown): CursorBody {
  if (typeof cursor !== 'string' || cursor.length === 0)
    ctx.v.fail('cursor must be a string from next_cursor');
  try {
    const body = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    if (typeof body === 'object' && body !== null) {
      const s = (body as { s?: unknown }).s;
      const k = (body as { k?: unknown }).k;
      if (typeof s === 'number' && Number.isSafeInteger(s)) return { s };
      if (typeof k === 'string') return { k };
    }
  } catch {
    // fall through to the refusal
  }
  return ctx.v.fail(`cursor ${JSON.stringify(cursor)} is not one this store handed out`);
}

export function pageLimit(ctx: SqlContext, query: PageQuery | undefined): number {
  return ctx.v.limit(query?.limit, 'limit', DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT);
}

/** The `ord` below which a newest-first page starts, or null for the first page. */
export function ordCursor(ctx: SqlContext, cursor: unknown): number | null {
  if (cursor === undefined || cursor === null) return null;
  const body = decode(ctx, cursor);
  if (!('s' in body)) ctx.v.fail('cursor does not belong to this list');
  return body.s;
}

/** The key after which an ascending page starts, or null for the first page. */
export function keyCursor(ctx: SqlContext, cursor: unknown): string | null {
  if (cursor === undefined || cursor === null) return null;
  const body = decode(ctx, cursor);
  if (!('k' in body)) ctx.v.fail('cursor does not belong to this list');
  return body.k;
}

/** Cuts the one extra row the query fetched and turns the last kept row into the next cursor. */
export function toPage<T>(rows: SqlRow[], limit: number, map: (row: SqlRow) => T, column = 'ord'): Page<T> {
  const more = rows.length > limit;
  const kept = more ? rows.slice(0, limit) : rows;
  const last = kept[kept.length - 1];
  if (!more || last === undefined) return { items: kept.map(map), next_cursor: null };
  const key = last[column];
  return {
    items: kept.map(map),
    next_cursor: encode(column === 'ord' ? { s: Number(key) } : { k: String(key) }),
  };
}
