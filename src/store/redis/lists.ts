/**
 * Paging through lex indexes (members `<created ms>:<id>`, all with score 0, so they sort by creation then
 * id). Several indexes are merged in order. An entry whose record is missing is skipped and, when the
 * caller allows it, removed; a record the caller filters out (expired, other status) is skipped.
 */
import { invalidRequest } from '../../core/errors.js';
import type { Page } from '../types.js';
import type { Ctx } from './plan.js';
import { decodeCursor, encodeCursor } from './validate.js';

export const MISSING = Symbol('missing');
export const SKIP = Symbol('skip');
export type Loaded<T> = T | typeof MISSING | typeof SKIP;

export interface IndexScan<T> {
  readonly keys: readonly string[];
  readonly desc: boolean;
  readonly limit: number;
  readonly cursor: string | null | undefined;
  /** The list and caller (validate.ts cursorList) its cursors belong to. */
  readonly list: string;
  /** Loads the records of members (in order); MISSING when the record does not exist, SKIP to leave it out. */
  readonly load: (members: readonly string[]) => Promise<Loaded<T>[]>;
  /** Removes an entry whose record is missing (omit to leave entries alone). */
  readonly prune?: (key: string, member: string) => Promise<unknown>;
}

async function fetchAfter(ctx: Ctx, key: string, desc: boolean, after: string | null, count: number) {
  if (desc) return ctx.redis.zrevrangebylex(key, after === null ? '+' : `(${after}`, '-', 'LIMIT', 0, count);
  return ctx.redis.zrangebylex(key, after === null ? '-' : `(${after}`, '+', 'LIMIT', 0, count);
}

export async function scanIndex<T>(ctx: Ctx, scan: IndexScan<T>): Promise<Page<T>> {
  const batch = Math.min(Math.max(scan.limit + 1, 20), 200);
  const found: { member: string; item: T }[] = [];
  let position = decodeCursor(scan.list, scan.cursor);
  if (position !== null && !/^\d{15}:/.test(position))
    throw invalidRequest('[redis] cursor is not one this store handed out');
  while (found.length <= scan.limit) {
    const lists = await Promise.all(scan.keys.map((key) => fetchAfter(ctx, key, scan.desc, position, batch)));
    const merged: { key: string; member: string }[] = [];
    lists.forEach((members, i) => {
      for (const member of members) merged.push({ key: scan.keys[i] as string, member });
    });
    merged.sort((a, b) => (a.member < b.member ? -1 : a.member > b.member ? 1 : 0) * (scan.desc ? -1 : 1));
    const exhausted = lists.every((members) => members.length < batch);
    const taken = exhausted ? merged : merged.slice(0, batch);
    if (taken.length === 0) break;
    const loaded = await scan.load(taken.map((entry) => entry.member));
    for (let i = 0; i < taken.length && found.length <= scan.limit; i++) {
      const entry = taken[i] as { key: string; member: string };
      const item = loaded[i];
      if (item === MISSING) await scan.prune?.(entry.key, entry.member);
      else if (item !== SKIP && item !== undefined) found.push({ member: entry.member, item });
    }
    position = (taken[taken.length - 1] as { member: string }).member;
    if (exhausted) break;
  }
  const items = found.slice(0, scan.limit);
  const last = items[items.length - 1];
  return {
    items: items.map((entry) => entry.item),
    next_cursor:
      found.length > scan.limit && last !== undefined ? encodeCursor(scan.list, last.member) : null,
  };
}
