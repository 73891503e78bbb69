/**
 * Paging through lex indexes (members `<created ms>:<id>`, all with score 0, so they sort by creation then
 * id), newest first; a record's position is its member. Several indexes are merged in order. An entry
 * whose record is missing is skipped and, when the caller allows it, removed; a record the caller filters
 * out (expired, other status) is skipped.
 */
import type { Listed, PageRequest } from '../core/driver.js';
import { memberId, type UserKeys } from './keys.js';
import type { Ctx } from './plan.js';
import { tenantKeys, userKeys } from './scope.js';

const MISSING = Symbol('missing');
const SKIP = Symbol('skip');
type Loaded<T> = T | typeof MISSING | typeof SKIP;

interface IndexScan<T> {
  readonly keys: readonly string[];
  readonly page: PageRequest;
  /** Loads the records of members (in order); MISSING when the record does not exist, SKIP to leave it out. */
  readonly load: (members: readonly string[]) => Promise<Loaded<T>[]>;
  /** Removes an entry whose record is missing (omit to leave entries alone). */
  readonly prune?: (key: string, member: string) => Promise<unknown>;
}

async function scanIndex<T>(ctx: Ctx, scan: IndexScan<T>): Promise<Listed<T>[]> {
  const { limit } = scan.page;
  const batch = Math.min(Math.max(limit, 20), 200);
  const found: Listed<T>[] = [];
  let position = typeof scan.page.after === 'string' ? scan.page.after : null;
  while (found.length < limit) {
    const from = position === null ? '+' : `(${position}`;
    const lists = await Promise.all(
      scan.keys.map((key) => ctx.redis.zrevrangebylex(key, from, '-', 'LIMIT', 0, batch)),
    );
    const merged: { key: string; member: string }[] = [];
    lists.forEach((members, i) => {
      for (const member of members) merged.push({ key: scan.keys[i] as string, member });
    });
    merged.sort((a, b) => (a.member < b.member ? 1 : a.member > b.member ? -1 : 0));
    const exhausted = lists.every((members) => members.length < batch);
    const taken = exhausted ? merged : merged.slice(0, batch);
    if (taken.length === 0) break;
    const loaded = await scan.load(taken.map((entry) => entry.member));
    for (let i = 0; i < taken.length && found.length < limit; i++) {
      const entry = taken[i] as { key: string; member: string };
      const rec = loaded[i];
      if (rec === MISSING) await scan.prune?.(entry.key, entry.member);
      else if (rec !== SKIP && rec !== undefined) found.push({ rec, pos: entry.member });
    }
    position = (taken[taken.length - 1] as { member: string }).member;
    if (exhausted) break;
  }
  return found;
}

/** Where a listed record lives: its owner's keys, its id and its index member. */
export interface ListedAt {
  readonly keys: UserKeys;
  readonly id: string;
  readonly member: string;
}

export interface RecordScan<T> {
  readonly keys: readonly string[];
  readonly page: PageRequest;
  readonly tenant: string;
  /** The user whose indexes these are (a missing record's entry is removed); absent for a tenant index. */
  readonly owner: string | undefined;
  /** The key of a record (hash field d) of the user. */
  readonly record: (keys: UserKeys, id: string) => string;
  /** False leaves a record out of the list. */
  readonly keep: (rec: T, at: ListedAt) => boolean | Promise<boolean>;
}

/** Lists the records of lex indexes, each read from its owner's keys (the tenant's owner hash names them). */
export function scanRecords<T>(ctx: Ctx, scan: RecordScan<T>): Promise<Listed<T>[]> {
  const { tenant, owner } = scan;
  return scanIndex<T>(ctx, {
    keys: scan.keys,
    page: scan.page,
    load: async (members) => {
      const ids = members.map(memberId);
      const users =
        owner !== undefined
          ? ids.map(() => owner)
          : await ctx.redis.hmget(tenantKeys(ctx, tenant).owners(), ...ids);
      return Promise.all(
        ids.map(async (id, i): Promise<Loaded<T>> => {
          const user = users[i];
          if (user === null || user === undefined) return SKIP;
          const keys = userKeys(ctx, tenant, user);
          const json = await ctx.redis.hget(scan.record(keys, id), 'd');
          if (json === null) return owner === undefined ? SKIP : MISSING;
          const rec = JSON.parse(json) as T;
          return (await scan.keep(rec, { keys, id, member: members[i] as string })) ? rec : SKIP;
        }),
      );
    },
    prune: (key, member) => ctx.redis.zrem(key, member),
  });
}
