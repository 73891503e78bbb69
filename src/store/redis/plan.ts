/**
 * A plan: the reads one operation made (each record with the revision it had) and the writes it wants,
 * applied by one Lua script that first checks every revision is unchanged. When one changed, nothing is
 * written and the whole operation runs again from its reads (optimistic concurrency, like WATCH/MULTI but
 * in one slot and one round trip). Writes to the tenant-level index (another slot) are made before the
 * script, undone when the script refuses; readers skip index entries whose record does not exist.
 */

import type { Redis } from 'ioredis';
import type { Clock } from '../../core/clock.js';
import { AgentStateError } from '../../core/errors.js';
import type { BlobCache } from '../shared/blob-cache.js';
import type { RedisScripts, ScriptArg } from './client.js';

export interface Ctx {
  readonly redis: Redis;
  readonly scripts: RedisScripts;
  readonly prefix: string;
  /** The store's clock: native TTLs are the logical time left by it (keys.ts). */
  readonly clock: Clock;
  /** The checkpoint blobs this store wrote and read recently (a read is not sent those it holds). */
  readonly checkpointBlobs: BlobCache;
}

/** A record as read: its JSON, revision and the extra hash fields asked for. */
interface Slot {
  json: string | null;
  rev: number;
  extra: Record<string, string | null>;
}

const WRITE_COMMANDS = new Set([
  'HSET',
  'HSETNX',
  'HDEL',
  'HINCRBY',
  'DEL',
  'ZADD',
  'ZREM',
  'RPUSH',
  'SADD',
  'SREM',
  'PEXPIRE',
  'PERSIST',
  'EXTEND',
]);

const MAX_ATTEMPTS = 50;

export class Plan {
  private readonly keys: string[] = [];
  private readonly keyIndex = new Map<string, number>();
  private readonly checks: ScriptArg[] = [];
  private checkCount = 0;
  private readonly writes: ScriptArg[] = [];
  private writeCount = 0;
  private readonly slots = new Map<string, Slot>();
  /** Tenant-level writes made before the script, their undo when it refuses, and writes made after it. */
  readonly before: (() => Promise<unknown>)[] = [];
  readonly undo: (() => Promise<unknown>)[] = [];
  readonly after: (() => Promise<unknown>)[] = [];
  /** Ids this plan creates, to claim in the tenant's owner hash (`key`) for `user` before the script runs. */
  private readonly claims: { key: string; user: string; id: string; kind: string }[] = [];

  constructor(readonly ctx: Ctx) {}

  /**
   * Claims a new record's id in the tenant's owner hash (id -> user) before the script writes the record:
   * an id another user of the tenant already holds makes the commit fail with `conflict` (nothing written),
   * as the SQL stores refuse a duplicate primary key. The claim is one script, so of two users creating
   * one id at once exactly one gets it. An id this user already holds stays theirs (a retry, or a record
   * the user's own script checks).
   */
  claim(ownersKey: string, user: string, id: string, kind: string): void {
    this.claims.push({ key: ownersKey, user, id, kind });
  }

  /** Runs the claims, by owner hash; throws `conflict` naming the first id another user holds. */
  private async claimIds(): Promise<void> {
    const byKey = new Map<string, { user: string; items: { id: string; kind: string }[] }>();
    for (const c of this.claims) {
      const group = byKey.get(`${c.key}\u0000${c.user}`) ?? { user: c.user, items: [] };
      group.items.push({ id: c.id, kind: c.kind });
      byKey.set(`${c.key}\u0000${c.user}`, group);
    }
    await Promise.all(
      [...byKey].map(async ([k, group]) => {
        const key = k.slice(0, k.indexOf('\u0000'));
        const taken = Number(
          await this.ctx.scripts.claimOwners(1, key, group.user, ...group.items.map((item) => item.id)),
        );
        const item = taken === 0 ? undefined : group.items[taken - 1];
        if (item !== undefined) {
          throw new AgentStateError('conflict', `[redis] ${item.kind} ${item.id} already exists`, {
            details: { id: item.id },
          });
        }
      }),
    );
  }

  private index(key: string): number {
    let i = this.keyIndex.get(key);
    if (i === undefined) {
      this.keys.push(key);
      i = this.keys.length;
      this.keyIndex.set(key, i);
    }
    return i;
  }

  /** The script refuses unless HGET key field equals `expected` (null: the field is absent). */
  check(key: string, field: string, expected: string | null): void {
    this.checks.push(this.index(key), field, expected === null ? '0' : '1', expected ?? '');
    this.checkCount++;
  }

  write(command: string, key: string, ...args: ScriptArg[]): void {
    if (!WRITE_COMMANDS.has(command))
      throw new AgentStateError('internal', `[redis] ${command} is not a plan write`);
    this.writes.push(command, this.index(key), args.length, ...args);
    this.writeCount++;
  }

  /** Reads a record (hash d, r and `extra` fields) and checks at commit that it is unchanged. */
  async read(
    key: string,
    extra: readonly string[] = [],
  ): Promise<{ json: string; rev: number; extra: Record<string, string | null> } | null> {
    let slot = this.slots.get(key);
    if (slot === undefined) {
      const row = await this.ctx.redis.hmget(key, 'd', 'r', ...extra);
      const rev = row[1] === null || row[1] === undefined ? 0 : Number(row[1]);
      const fields: Record<string, string | null> = {};
      extra.forEach((name, i) => {
        fields[name] = row[i + 2] ?? null;
      });
      slot = { json: row[0] ?? null, rev, extra: fields };
      this.slots.set(key, slot);
      this.check(key, 'r', rev === 0 ? null : String(rev));
    }
    return slot.json === null ? null : { json: slot.json, rev: slot.rev, extra: { ...slot.extra } };
  }

  /** Writes a record read before with `read` (or known absent): bumps its revision. */
  put(key: string, json: string, extra: Record<string, string | number> = {}): void {
    const slot = this.slots.get(key);
    if (slot === undefined)
      throw new AgentStateError('internal', `[redis] ${key} written before it was read`);
    slot.rev += 1;
    slot.json = json;
    const pairs: ScriptArg[] = [];
    for (const [name, value] of Object.entries(extra)) {
      pairs.push(name, value);
      slot.extra[name] = String(value);
    }
    this.write('HSET', key, 'd', json, 'r', slot.rev, ...pairs);
  }

  /** HINCRBY on a field of a record read before; the new value is what later reads of this plan see. */
  bump(key: string, field: string, by: number): number {
    const slot = this.slots.get(key);
    if (slot === undefined)
      throw new AgentStateError('internal', `[redis] ${key} written before it was read`);
    const next = Number(slot.extra[field] ?? 0) + by;
    slot.extra[field] = String(next);
    this.write('HINCRBY', key, field, by);
    return next;
  }

  remove(key: string): void {
    const slot = this.slots.get(key);
    if (slot !== undefined) {
      slot.json = null;
      slot.extra = {};
    }
    this.write('DEL', key);
  }

  /** Runs the plan; false when a checked revision changed (nothing was written by the script). */
  async commit(): Promise<boolean> {
    // Ids of new records first: a refused claim throws before anything of the plan is written.
    if (this.claims.length > 0) await this.claimIds();
    // The tenant-level writes are sent first and the script right behind them, in one round trip: one
    // connection runs commands in the order they were sent.
    const before = Promise.all(this.before.map((fn) => fn()));
    const script =
      this.writeCount === 0
        ? Promise.resolve([1])
        : this.ctx.scripts.plan(
            this.keys.length,
            ...this.keys,
            this.checkCount,
            ...this.checks,
            this.writeCount,
            ...this.writes,
          );
    const [, reply] = (await Promise.all([before, script])) as [unknown, unknown[]];
    if (reply[0] !== 1) {
      await Promise.all(this.undo.map((fn) => fn()));
      return false;
    }
    await Promise.all(this.after.map((fn) => fn()));
    return true;
  }
}

/** Builds and commits a plan, again from its reads while a revision it read changes under it. */
export async function runPlan<T>(ctx: Ctx, build: (plan: Plan) => Promise<T>): Promise<T> {
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const plan = new Plan(ctx);
    const result = await build(plan);
    if (await plan.commit()) return result;
    await new Promise((resolve) => setTimeout(resolve, Math.random() * Math.min(2 + attempt * 2, 30)));
  }
  throw new AgentStateError(
    'conflict',
    `[redis] gave up after ${MAX_ATTEMPTS} concurrent changes of the same records`,
  );
}
