/**
 * Pages of every list: newest first (or by key for memory items). A cursor seals the position of the last
 * record of the page before with the store's key: it shows nothing and opens only for the list and the
 * caller that got it.
 */
import { openCursor, sealCursor } from '../shared/sealed-cursor.js';
import { DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT, type Page, type PageQuery, type ReadScope } from '../types.js';
import type { CoreEnv } from './context.js';
import type { Listed, ListPosition, PageRequest } from './driver.js';

export interface PageAsked {
  readonly list: string;
  readonly scope: ReadScope;
  readonly request: PageRequest;
  /** The limit the caller asked for (the request asks for one more, to know whether a next page exists). */
  readonly limit: number;
}

/** The page a query asks for, checked: the limit and where the cursor points. */
export async function askPage(
  env: CoreEnv,
  list: string,
  scope: ReadScope,
  query: PageQuery | undefined,
): Promise<PageAsked> {
  const limit = env.v.limit(query?.limit, 'limit', DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT);
  const cursor = query?.cursor;
  let after: ListPosition | null = null;
  if (cursor !== undefined && cursor !== null) {
    if (typeof cursor !== 'string' || cursor.length === 0)
      env.v.fail('cursor must be a string from next_cursor');
    const at = openCursor(await env.cursorKey(), list, scope, cursor, (message) => env.v.fail(message));
    after = 's' in at ? at.s : at.k;
  }
  return { list, scope, request: { after, limit: limit + 1 }, limit };
}

/** The page from the rows the driver gave for `asked`. */
export async function toPage<T>(
  env: CoreEnv,
  asked: PageAsked,
  rows: readonly Listed<T>[],
): Promise<Page<T>> {
  const items = rows.slice(0, asked.limit);
  const last = items.at(-1);
  const next_cursor =
    rows.length > asked.limit && last !== undefined
      ? sealCursor(
          await env.cursorKey(),
          asked.list,
          asked.scope,
          typeof last.pos === 'number' ? { s: last.pos } : { k: last.pos },
        )
      : null;
  return { items: items.map((row) => row.rec), next_cursor };
}
