/**
 * Where a page of a run's checkpoints starts: `before` (a checkpoint id) or `cursor` (the previous page's
 * `next_cursor`, which is that id too), so a pager that passes `next_cursor` back as `cursor`, as every
 * other list takes it, pages on instead of reading the first page again. A field the query does not have
 * is refused by name, never ignored.
 */
import type { CheckpointQuery } from '../types.js';

const QUERY_FIELDS = ['limit', 'before', 'cursor'];

/** The id the page starts before, or null for the newest page; `fail` throws the adapter's refusal. */
export function checkpointPageStart(query: CheckpointQuery, fail: (message: string) => never): string | null {
  for (const key of Object.keys(query))
    if (!QUERY_FIELDS.includes(key))
      fail(`query.${key} is not a field of a checkpoint query (limit, before, cursor)`);
  const before = query.before ?? null;
  const cursor = query.cursor ?? null;
  if (before !== null && cursor !== null && before !== cursor)
    fail('before and cursor name different checkpoints: give one of them');
  return before ?? cursor;
}
