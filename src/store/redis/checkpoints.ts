/**
 * Checkpoint rows through the shared codec: a hash per checkpoint (its record without channels, and the
 * manifest), a per-run sorted set by sequence, and a per-run hash of blobs (hash -> `base|data`, HSETNX).
 * One script reads any number of checkpoints with every blob of their chains that the store's blob cache
 * does not hold.
 */
import type { Checkpoint } from '../../core/model.js';
import type { Wholes } from '../shared/blob-cache.js';
import {
  type BlobRow,
  ChannelDecoder,
  encodeChannels,
  type Manifest,
  runMemo,
} from '../shared/checkpoint-codec.js';
import type { ReadScope } from '../types.js';
import { ActionRows } from './actions.js';
import { noteAge } from './ages.js';
import type { UserKeys } from './keys.js';
import type { Ctx } from './plan.js';
import { indexInTenant, tenantKeys } from './scope.js';

/**
 * Reads checkpoints (in the order of `ids`, missing ones left out) with their channels, in one script. The
 * blobs this store holds of the run's last manifest are named to the script, which sends the others; a
 * checkpoint read alone takes its channels from the whole values the store keeps.
 */
async function readMany(
  ctx: Ctx,
  keys: UserKeys,
  run: string,
  ids: readonly string[],
): Promise<Checkpoint[]> {
  if (ids.length === 0) return [];
  const cache = ctx.checkpointBlobs;
  const runKey = keys.base + run;
  const wholes: Wholes | undefined = ids.length === 1 && cache.enabled ? new Map() : undefined;
  const blobs = cache.heldOfLast(runKey, wholes);
  const [records, flatBlobs] = (await ctx.scripts.checkpointRead(
    ids.length + 1,
    keys.runBlobs(run),
    ...ids.map((id) => keys.checkpoint(id)),
    ...blobs.keys(),
  )) as [(string | null)[], string[]];
  const read: BlobRow[] = [];
  for (let i = 0; i < flatBlobs.length; i += 2) {
    const hash = flatBlobs[i] as string;
    const value = flatBlobs[i + 1] as string;
    const bar = value.indexOf('|');
    const blob = { hash, base: bar === 0 ? null : value.slice(0, bar), data: value.slice(bar + 1) };
    read.push(blob);
    blobs.set(hash, blob);
  }
  cache.add(runKey, read);
  const decoder = wholes === undefined ? new ChannelDecoder(blobs) : null;
  const out: Checkpoint[] = [];
  for (let i = 0; i < records.length; i += 2) {
    const d = records[i];
    const m = records[i + 1];
    if (d === null || d === undefined || m === null || m === undefined) continue;
    // The parsed record is this call's own: channels are set on it (on Node 20 a spread followed by a
    // new key, `{ ...record, channels }`, costs twice the whole parse of the record).
    const checkpoint = JSON.parse(d) as Checkpoint;
    const manifest = JSON.parse(m) as Manifest;
    if (i === 0) cache.noteManifest(runKey, manifest);
    checkpoint.channels =
      decoder === null
        ? cache.decodeOne(runKey, manifest, blobs, wholes as Wholes)
        : decoder.decode(manifest);
    out.push(checkpoint);
  }
  return out;
}

export class CheckpointRows extends ActionRows {
  /** The keys of the run's owner in scope (its first writer in the tenant), or null. */
  private runKeys(scope: ReadScope, run: string): Promise<UserKeys | null> {
    return this.owner(scope, `run:${run}`);
  }

  async getCheckpoint(scope: ReadScope, id: string): Promise<Checkpoint | null> {
    const { ctx } = this;
    const keys = await this.owner(scope, id);
    const run = keys === null ? null : await ctx.redis.hget(keys.checkpoint(id), 'run');
    if (keys === null || run === null) return null;
    return (await readMany(ctx, keys, run, [id]))[0] ?? null;
  }
  async latestCheckpoint(scope: ReadScope, run: string): Promise<Checkpoint | null> {
    const { ctx } = this;
    const keys = await this.runKeys(scope, run);
    if (keys === null) return null;
    const ids = await ctx.redis.zrevrange(keys.runCheckpoints(run), 0, 0);
    return (await readMany(ctx, keys, run, ids))[0] ?? null;
  }
  async listCheckpoints(
    scope: ReadScope,
    run: string,
    page: { readonly before: string | null; readonly limit: number },
  ): Promise<Checkpoint[]> {
    const { ctx } = this;
    const keys = await this.runKeys(scope, run);
    if (keys === null) return [];
    let start = 0;
    if (page.before !== null) {
      const rank = await ctx.redis.zrevrank(keys.runCheckpoints(run), page.before);
      if (rank === null) return [];
      start = rank + 1;
    }
    const ids = await ctx.redis.zrevrange(keys.runCheckpoints(run), start, start + page.limit - 1);
    return readMany(ctx, keys, run, ids);
  }

  async insertCheckpoint(checkpoint: Checkpoint): Promise<boolean> {
    const { ctx } = this;
    const { channels, ...stored } = checkpoint;
    const { id, run_id: run } = stored;
    const keys = this.keys(stored);
    const plan = this.p;
    // One round trip: the run's sequence, the manifest of its latest checkpoint, and whether the id is free.
    const [seqRaw, manifestJson, row] = await Promise.all([
      ctx.redis.hget(keys.runSequences(), run),
      ctx.redis.hget(keys.runLatest(), run),
      this.row(keys.checkpoint(id)),
    ]);
    if (row !== null) return false;
    plan.check(keys.runSequences(), run, seqRaw);
    const seq = Number(seqRaw ?? 0) + 1;
    const previous = manifestJson === null ? null : (JSON.parse(manifestJson) as Manifest);
    const memo = runMemo(JSON.stringify([stored.tenant_id, stored.user_id, run]));
    const { manifest, blobs } = encodeChannels(channels, previous, memo);
    const runKey = keys.base + run;
    ctx.checkpointBlobs.add(runKey, blobs);
    ctx.checkpointBlobs.noteManifest(runKey, manifest);
    const manifestText = JSON.stringify(manifest);
    const fields: Record<string, string> = { m: manifestText, run };
    if (stored.task_id !== null) fields.task = stored.task_id;
    plan.put(keys.checkpoint(id), JSON.stringify(stored), fields);
    if (stored.task_id !== null) plan.write('SADD', keys.taskCheckpoints(stored.task_id), id);
    noteAge(plan, stored.tenant_id, stored.user_id, 'checkpoints', id, stored.created_at);
    plan.write('HSET', keys.runLatest(), run, manifestText);
    for (const blob of blobs)
      plan.write('HSETNX', keys.runBlobs(run), blob.hash, `${blob.base ?? ''}|${blob.data}`);
    plan.write('HSET', keys.runSequences(), run, seq);
    plan.write('ZADD', keys.runCheckpoints(run), seq, id);
    indexInTenant(plan, stored.tenant_id, stored.user_id, id, keys.checkpoint(id), [], 'checkpoint');
    const owners = tenantKeys(ctx, stored.tenant_id).owners();
    plan.before.push(() => ctx.redis.hsetnx(owners, `run:${run}`, stored.user_id));
    return true;
  }

  async deleteCheckpoints(scope: ReadScope, run: string, ids: readonly string[]): Promise<void> {
    const { ctx } = this;
    const keys = await this.runKeys(scope, run);
    if (keys === null || ids.length === 0) return;
    const plan = this.p;
    const r = ctx.redis;
    const [seqRaw, all, hashes] = await Promise.all([
      r.hget(keys.runSequences(), run),
      r.zrevrange(keys.runCheckpoints(run), 0, -1),
      r.hkeys(keys.runBlobs(run)),
    ]);
    // A put meanwhile (it bumps the sequence) makes this start again.
    plan.check(keys.runSequences(), run, seqRaw);
    const doomed = new Set(ids);
    const removed = all.filter((id) => doomed.has(id));
    if (removed.length === 0) return;
    const kept = all.filter((id) => !doomed.has(id));
    // The blobs the kept checkpoints need stay; the others go.
    const blobsOf = async (part: string[]) => {
      const keysOf = part.map((id) => keys.checkpoint(id));
      const reply = await ctx.scripts.checkpointRead(part.length + 1, keys.runBlobs(run), ...keysOf);
      return (reply as [unknown, string[]])[1].filter((_, i) => i % 2 === 0);
    };
    const [tasks, needed] = await Promise.all([
      Promise.all(removed.map((id) => r.hget(keys.checkpoint(id), 'task'))),
      Promise.all(chunks(kept, 500).map(blobsOf)),
    ]);
    const live = new Set(needed.flat());
    removed.forEach((id, i) => {
      plan.write('DEL', keys.checkpoint(id));
      const task = tasks[i];
      if (task !== null && task !== undefined) plan.write('SREM', keys.taskCheckpoints(task), id);
    });
    const latest = kept[0];
    if (latest === undefined || latest !== all[0]) {
      // The latest manifest changed (what the next put encodes against): a put that read the old one
      // starts again on the bumped sequence. Without a checkpoint left, the run has none.
      if (latest === undefined) plan.write('HDEL', keys.runLatest(), run);
      else plan.write('HSET', keys.runLatest(), run, (await r.hget(keys.checkpoint(latest), 'm')) ?? '{}');
      plan.write('HINCRBY', keys.runSequences(), run, 1);
    }
    for (const part of chunks(removed, 500)) {
      plan.write('ZREM', keys.runCheckpoints(run), ...part);
      plan.write('ZREM', keys.ages('checkpoints'), ...part);
    }
    for (const part of chunks(
      hashes.filter((hash) => !live.has(hash)),
      500,
    ))
      plan.write('HDEL', keys.runBlobs(run), ...part);
    const owners = tenantKeys(ctx, scope.tenant_id).owners();
    plan.after.push(() => r.hdel(owners, ...removed));
  }
}

function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
