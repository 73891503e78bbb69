/**
 * Keyset paging: lists run newest first by write order (an increasing `ord` column), memory items ascending
 * by key; a cursor names the last row of the page before, sealed with the database's cursor key
 * (shared/sealed-cursor.ts) so that it reveals no write counter and opens only for its list and scope.
 */
import { type CursorPosition, cursorKeyFromHex, openCursor, sealCursor } from '../shared/sealed-cursor.js';
import { DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT, type Page, type PageQuery, type ReadScope } from '../types.js';
import type { SqlContext } from './context.js';
import type { SqlExecutor, SqlRow } from './executor.js';

/** The database's cursor key (made by migration 3), read once per store on the first cursor. */
export class CursorKey {
  private key: Promise<Buffer> | null = null;

  get(q: SqlExecutor): Promise<Buffer> {
    if (this.key === null) {
      const reading = q
        .all("SELECT value FROM agentstate_keys WHERE name = 'cursor'")
        .then((rows) => cursorKeyFromHex(String(rows[0]?.value ?? '')));
      reading.catch(() => {
        // A failed read is tried again on the next cursor.
        if (this.key === reading) this.key = null;
      });
      this.key = reading;
    }
    return this.key;
  }
}

/** The list a cursor belongs to and the caller it was handed to. */
export interface CursorList {
  readonly name: string;
  readonly scope: ReadScope;
}

async function position(
  ctx: SqlContext,
  q: SqlExecutor,
  list: CursorList,
  cursor: unknown,
): Promise<CursorPosition | null> {
  if (cursor === undefined || cursor === null) return null;
  if (typeof cursor !== 'string' || cursor.length === 0)
    ctx.v.fail('cursor must be a string from next_cursor');
  return openCursor(await ctx.cursorKey.get(q), list.name, list.scope, cursor, (message) =>
    ctx.v.fail(message),
  );
}

export function pageLimit(ctx: SqlContext, query: PageQuery | undefined): number {
  return ctx.v.limit(query?.limit, 'limit', DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT);
}

/** The `ord` below which a newest-first page starts, or null for the first page. */
export async function ordCursor(
  ctx: SqlContext,
  q: SqlExecutor,
  list: CursorList,
  cursor: unknown,
): Promise<number | null> {
  const at = await position(ctx, q, list, cursor);
  if (at === null) return null;
  if (!('s' in at)) ctx.v.fail('cursor does not belong to this list');
  return at.s;
}

/** The key after which an ascending page starts, or null for the first page. */
export async function keyCursor(
  ctx: SqlContext,
  q: SqlExecutor,
  list: CursorList,
  cursor: unknown,
): Promise<string | null> {
  const at = await position(ctx, q, list, cursor);
  if (at === null) return null;
  if (!('k' in at)) ctx.v.fail('cursor does not belong to this list');
  return at.k;
}

/** Cuts the one extra row the query fetched and seals the last kept row's position as the next cursor. */
export async function toPage<T>(
  ctx: SqlContext,
  q: SqlExecutor,
  list: CursorList,
  rows: SqlRow[],
  limit: number,
  map: (row: SqlRow) => T,
  column = 'ord',
): Promise<Page<T>> {
  const more = rows.length > limit;
  const kept = more ? rows.slice(0, limit) : rows;
  const last = kept[kept.length - 1];
  if (!more || last === undefined) return { items: kept.map(map), next_cursor: null };
  const key = last[column];
  const at: CursorPosition = column === 'ord' ? { s: Number(key) } : { k: String(key) };
  return {
    items: kept.map(map),
    next_cursor: sealCursor(await ctx.cursorKey.get(q), list.name, list.scope, at),
  };
}
