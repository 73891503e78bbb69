/**
 * Checkpoints through the shared codec: a hash per checkpoint (its record without channels, and the
 * manifest), a per-run sorted set by sequence, and a per-run hash of blobs (hash -> `base|data`, HSETNX).
 * One script reads any number of checkpoints with every blob of their chains.
 */

import { isoAt } from '../../core/clock.js';
import { AgentStateError, invalidRequest } from '../../core/errors.js';
import { isId, newId } from '../../core/ids.js';
import { isPlainJsonObject } from '../../core/json.js';
import type { Checkpoint } from '../../core/model.js';
import {
  type BlobRow,
  ChannelDecoder,
  encodeChannels,
  type Manifest,
  runMemo,
} from '../shared/checkpoint-codec.js';
import { checkpointPageStart } from '../shared/checkpoint-query.js';
import { CHECKPOINT_FIELDS } from '../shared/known-fields.js';
import type { CheckpointQuery, NewCheckpoint, Page, ReadScope, Scope } from '../types.js';
import { noteAge } from './ages.js';
import type { UserKeys } from './keys.js';
import { type Ctx, type Plan, runPlan } from './plan.js';
import { indexInTenant, inOwnerScope, resolveUser, tenantKeys, userKeys } from './scope.js';
import { requireOwnSession } from './sessions.js';
import * as v from './validate.js';

type Stored = Omit<Checkpoint, 'channels'>;

function nullableIdOf(value: unknown, kind: 'session' | 'task' | 'checkpoint', name: string): void {
  if (value !== undefined && value !== null && (typeof value !== 'string' || !isId(value, kind))) {
    throw invalidRequest(`[redis] ${name} must be a ${kind} id or null`);
  }
}

export function checkNewCheckpoint(input: NewCheckpoint): void {
  if (typeof input !== 'object' || input === null)
    throw invalidRequest('[redis] checkpoint input must be an object');
  v.knownFields(input, CHECKPOINT_FIELDS, 'checkpoint');
  v.optionalId(input.id, 'checkpoint', 'id');
  v.text(input.run_id, 'run_id');
  nullableIdOf(input.session_id, 'session', 'session_id');
  nullableIdOf(input.task_id, 'task', 'task_id');
  nullableIdOf(input.parent_id, 'checkpoint', 'parent_id');
  v.integer(input.step, 'step', 0, Number.MAX_SAFE_INTEGER);
  if (input.label !== undefined) v.text(input.label, 'label', v.MAX_NAME_LENGTH, true);
  // The fast check passes what the guard passes; only a refusal runs the guard, for its error and path.
  if (!isPlainJsonObject(input.channels)) v.jsonObject(input.channels, 'channels');
  if (input.metadata !== undefined) v.jsonObject(input.metadata, 'metadata');
}

export async function preparePutCheckpoint(
  plan: Plan,
  scope: Scope,
  input: NewCheckpoint,
): Promise<Checkpoint> {
  const ctx = plan.ctx;
  const keys = userKeys(ctx, scope.tenant_id, scope.user_id);
  const run = input.run_id;
  const id = input.id ?? newId('checkpoint', ctx.random);
  // One round trip: the run's sequence, the manifest of its latest checkpoint, and whether the id is free.
  // The session it names (if any) must be the user's own live one, checked by the same script.
  const [seqRaw, manifestJson] = await Promise.all([
    ctx.redis.hget(keys.runSequences(), run),
    ctx.redis.hget(keys.runLatest(), run),
    plan.read(keys.checkpoint(id)),
    requireOwnSession(plan, scope, input.session_id).catch((error: unknown) => error),
  ]).then(([seq, latest, row, refused]) => {
    if (row !== null) throw new AgentStateError('conflict', `[redis] checkpoint ${id} already exists`);
    if (refused !== undefined) throw refused;
    return [seq, latest] as const;
  });
  plan.check(keys.runSequences(), run, seqRaw);
  const seq = Number(seqRaw ?? 0) + 1;
  const previous = manifestJson === null ? null : (JSON.parse(manifestJson) as Manifest);
  const memo = runMemo(JSON.stringify([scope.tenant_id, scope.user_id, run]));
  const { manifest, blobs } = encodeChannels(input.channels, previous, memo);
  const stored: Stored = {
    id,
    tenant_id: scope.tenant_id,
    user_id: scope.user_id,
    run_id: run,
    session_id: input.session_id ?? null,
    task_id: input.task_id ?? null,
    step: input.step,
    parent_id: input.parent_id ?? null,
    label: input.label ?? '',
    metadata: structuredClone(input.metadata ?? {}),
    created_at: isoAt(ctx.clock.now()),
  };
  const manifestText = JSON.stringify(manifest);
  const fields: Record<string, string> = { m: manifestText, run };
  if (stored.task_id !== null) fields.task = stored.task_id;
  plan.put(keys.checkpoint(id), JSON.stringify(stored), fields);
  if (stored.task_id !== null) plan.write('SADD', keys.taskCheckpoints(stored.task_id), id);
  noteAge(plan, scope.tenant_id, scope.user_id, 'checkpoints', id, stored.created_at);
  plan.write('HSET', keys.runLatest(), run, manifestText);
  for (const blob of blobs)
    plan.write('HSETNX', keys.runBlobs(run), blob.hash, `${blob.base ?? ''}|${blob.data}`);
  plan.write('HSET', keys.runSequences(), run, seq);
  plan.write('ZADD', keys.runCheckpoints(run), seq, stored.id);
  indexInTenant(
    plan,
    scope.tenant_id,
    scope.user_id,
    stored.id,
    [],
    'checkpoint',
    input.id === undefined || input.id === null,
  );
  const owners = tenantKeys(ctx, scope.tenant_id).owners();
  plan.before.push(() => ctx.redis.hsetnx(owners, `run:${run}`, scope.user_id));
  // The caller's own channels: stored as text above, so nothing returned shares memory with what is kept.
  return { ...stored, channels: input.channels };
}

/** Reads checkpoints (in the order of `ids`, missing ones left out) with their channels, in one script. */
async function readMany(
  ctx: Ctx,
  keys: UserKeys,
  run: string,
  ids: readonly string[],
): Promise<Checkpoint[]> {
  if (ids.length === 0) return [];
  const reply = (await ctx.scripts.checkpointRead(
    ids.length + 1,
    keys.runBlobs(run),
    ...ids.map((id) => keys.checkpoint(id)),
  )) as [(string | null)[], string[]];
  const [records, flatBlobs] = reply;
  const blobs = new Map<string, BlobRow>();
  for (let i = 0; i < flatBlobs.length; i += 2) {
    const hash = flatBlobs[i] as string;
    const value = flatBlobs[i + 1] as string;
    const bar = value.indexOf('|');
    blobs.set(hash, { hash, base: bar === 0 ? null : value.slice(0, bar), data: value.slice(bar + 1) });
  }
  const decoder = new ChannelDecoder(blobs);
  const out: Checkpoint[] = [];
  for (let i = 0; i < records.length; i += 2) {
    const d = records[i];
    const m = records[i + 1];
    if (d === null || d === undefined || m === null || m === undefined) continue;
    out.push({ ...(JSON.parse(d) as Stored), channels: decoder.decode(JSON.parse(m) as Manifest) });
  }
  return out;
}

export function putCheckpoint(ctx: Ctx, scope: Scope, input: NewCheckpoint): Promise<Checkpoint> {
  v.checkScope(scope);
  checkNewCheckpoint(input);
  return runPlan(ctx, (plan) => preparePutCheckpoint(plan, scope, input));
}

export function getCheckpoint(ctx: Ctx, scope: ReadScope, id: string): Promise<Checkpoint | null> {
  return inOwnerScope(
    ctx,
    scope,
    id,
    'checkpoint',
    async (s) => {
      const keys = userKeys(ctx, s.tenant_id, s.user_id);
      const run = await ctx.redis.hget(keys.checkpoint(id), 'run');
      if (run === null) return null;
      return (await readMany(ctx, keys, run, [id]))[0] ?? null;
    },
    () => null,
  );
}

/** The keys of the run's owner in scope, or null when the run is not one of the scope's. */
async function runKeys(ctx: Ctx, scope: ReadScope, run: string): Promise<UserKeys | null> {
  v.checkReadScope(scope);
  v.text(run, 'run_id');
  const user = await resolveUser(ctx, scope, `run:${run}`);
  return user === null ? null : userKeys(ctx, scope.tenant_id, user);
}

export async function latestCheckpoint(ctx: Ctx, scope: ReadScope, run: string): Promise<Checkpoint | null> {
  const keys = await runKeys(ctx, scope, run);
  if (keys === null) return null;
  const ids = await ctx.redis.zrevrange(keys.runCheckpoints(run), 0, 0);
  return (await readMany(ctx, keys, run, ids))[0] ?? null;
}

export async function listCheckpoints(
  ctx: Ctx,
  scope: ReadScope,
  run: string,
  query: CheckpointQuery = {},
): Promise<Page<Checkpoint>> {
  const limit = v.limit(query.limit, 20, 500);
  const before = checkpointPageStart(query, (message) => {
    throw invalidRequest(`[redis] ${message}`);
  });
  if (before !== null) v.text(before, 'before');
  const keys = await runKeys(ctx, scope, run);
  const empty = { items: [], next_cursor: null };
  if (keys === null) return empty;
  let start = 0;
  if (before !== null) {
    const rank = await ctx.redis.zrevrank(keys.runCheckpoints(run), before);
    if (rank === null) return empty;
    start = rank + 1;
  }
  const ids = await ctx.redis.zrevrange(keys.runCheckpoints(run), start, start + limit);
  const items = await readMany(ctx, keys, run, ids.slice(0, limit));
  const last = items[items.length - 1];
  return { items, next_cursor: ids.length > limit && last !== undefined ? last.id : null };
}

export async function pruneCheckpoints(
  ctx: Ctx,
  scope: ReadScope,
  run: string,
  keep: number,
): Promise<number> {
  v.integer(keep, 'keep', 0, Number.MAX_SAFE_INTEGER);
  const keys = await runKeys(ctx, scope, run);
  if (keys === null) return 0;
  return runPlan(ctx, async (plan) => {
    const seqRaw = await ctx.redis.hget(keys.runSequences(), run);
    plan.check(keys.runSequences(), run, seqRaw);
    const ids = await ctx.redis.zrevrange(keys.runCheckpoints(run), 0, -1);
    const removed = ids.slice(keep);
    if (removed.length === 0) return 0;
    const live = new Set<string>();
    if (keep > 0) {
      const reply = (await ctx.scripts.checkpointRead(
        keep + 1,
        keys.runBlobs(run),
        ...ids.slice(0, keep).map((id) => keys.checkpoint(id)),
      )) as [unknown[], string[]];
      for (let i = 0; i < reply[1].length; i += 2) live.add(reply[1][i] as string);
    }
    const dead = (await ctx.redis.hkeys(keys.runBlobs(run))).filter((hash) => !live.has(hash));
    const tasks = await Promise.all(removed.map((id) => ctx.redis.hget(keys.checkpoint(id), 'task')));
    for (const id of removed) plan.write('DEL', keys.checkpoint(id));
    removed.forEach((id, i) => {
      const task = tasks[i];
      if (task !== null && task !== undefined) plan.write('SREM', keys.taskCheckpoints(task), id);
    });
    if (keep === 0) {
      // Without a checkpoint left, the next one must not be encoded against blobs removed here; the bumped
      // sequence makes a put that read the old latest manifest start again.
      plan.write('HDEL', keys.runLatest(), run);
      plan.write('HINCRBY', keys.runSequences(), run, 1);
    }
    for (let i = 0; i < removed.length; i += 500) {
      plan.write('ZREM', keys.runCheckpoints(run), ...removed.slice(i, i + 500));
      plan.write('ZREM', keys.ages('checkpoints'), ...removed.slice(i, i + 500));
    }
    for (let i = 0; i < dead.length; i += 500)
      plan.write('HDEL', keys.runBlobs(run), ...dead.slice(i, i + 500));
    const owners = tenantKeys(ctx, scope.tenant_id).owners();
    plan.after.push(() => ctx.redis.hdel(owners, ...removed));
    return removed.length;
  });
}
