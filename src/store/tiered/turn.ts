/**
 * commitTurn across the two tiers. The write order, and what a crash between the steps leaves:
 *
 * 1. Every part of the batch is checked (nothing is read or written before all checks pass).
 * 2. When the batch patches a session, appends messages or carries run events, the session's turn lock
 *    is taken (lock.ts): from here until step 6 no other call changes that session's version or appends
 *    to it.
 * 3. The Redis half is prepared but not written: the session must be live and at the expected version
 *    (`not_found` / `version_conflict` here change nothing anywhere). Every session the durable parts
 *    name (a created task's, a begun action's, the checkpoint's, a task moved to another session) must
 *    be a live one of the user's (attach.ts): their turn locks are taken in step 2 as well.
 * 4. The hot copies of the tasks to update are dropped (hot.ts), so readers use PostgreSQL from now on.
 * 5. ONE PostgreSQL transaction: created and updated tasks (expected versions checked against
 *    PostgreSQL), their events, begun and completed actions, the checkpoint, the memory items (another
 *    scope's too: `other_memory`), the session's open tasks when asked (`list_open_tasks`; a batch with
 *    no durable part lists them after),
 *    and the run's events (`batch.events`, durable.ts), a batch with nothing else durable included.
 *    A failure rolls all of it back, and nothing was written to Redis but the dropped hot copies.
 * 6. The Redis half, prepared again and written by one script: session patch and TTL renewal, messages
 *    with gap-free seqs (retried while a concurrent touch moves the session under it). With run events,
 *    the Redis half is pinned (one instant, the message ids drawn once) and the locks of step 2 keep every
 *    append out: what it writes is exactly what step 3 prepared and step 5's events tell
 *    (`message.created`, and what `final` saw); should it still differ (a lock outlasted), nothing is
 *    written to Redis and the caller gets durable_committed as below.
 * 7. The new tasks are written through to their hot copies; the lock is released.
 * 8. The lease the batch frees (`release_lease`), a PostgreSQL row, is freed last, after the Redis half:
 *    freed with the durable part, it would let another run start before this turn's messages are there.
 *    It is freed only when every step before succeeded; a failure to free it is told by `lease_released`.
 *
 * A crash or a Redis failure between 5 and 6 leaves the task state, actions and checkpoint committed and
 * the session without this turn's patch and messages: the state is right and the reply can be
 * regenerated. The caller gets `store_unavailable` with details.durable_committed = true (a retry of the
 * same batch then fails with `version_conflict` on its tasks, as it should). The same happens, without a
 * crash, when the session expires or is swept between steps 3 and 6, or when a PostgreSQL commit outlasts
 * the lock's TTL and another caller changed the session meanwhile. A process that dies holding a lock
 * blocks that session's version changes until the lock's TTL runs out.
 */
import type { RandomSource } from '../../core/clock.js';
import { AgentStateError } from '../../core/errors.js';
import { type Message, OPEN_TASK_STATES, type Session } from '../../core/model.js';
import type { CoreEnv } from '../core/context.js';
import type { StoreDriver } from '../core/driver.js';
import { appendChecked, checkMessages } from '../core/messages.js';
import { applySessionPatch, checkSessionPatch } from '../core/sessions.js';
import { type CheckedBatch, checkBatch } from '../core/turn.js';
import { redisRows } from '../redis/driver.js';
import { Plan, type Ctx as RedisCtx, runPlan } from '../redis/plan.js';
import type { Scope, StateStore, TurnBatch, TurnResult } from '../types.js';
import { missingSessions, named, sessionNotFound } from './attach.js';
import { commitDurableWithEvents } from './durable.js';
import { durableCommitted, rebrand } from './errors.js';
import type { HotTasks } from './hot.js';
import type { SessionLocks } from './lock.js';

/** Called after the PostgreSQL commit and before the Redis write (tests inject failures here). */
export type AfterDurableCommit = (turn: { scope: Scope; durable: TurnResult }) => void | Promise<void>;

export interface TurnDeps {
  readonly redis: RedisCtx;
  /** The store core's settings for the Redis half (its rules run on the Redis rows of a plan). */
  readonly redisEnv: CoreEnv;
  readonly pg: StateStore;
  /** The driver under `pg`: a turn with run events commits through it (durable.ts). */
  readonly pgDriver: StoreDriver;
  /** The tiered store's own checks and settings (its errors start with `[tiered]`). */
  readonly env: CoreEnv;
  readonly hot: HotTasks;
  readonly locks: SessionLocks;
  readonly afterDurableCommit?: AfterDurableCommit | undefined;
}

interface RedisHalf {
  session: Session | null;
  messages: Message[];
}

const EMPTY: TurnResult = { session: null, tasks: [], actions: [], messages: [], checkpoint: null };

/** The Redis half of a batch, checked by the store core's rules. */
interface RedisParts {
  readonly patch: ReturnType<typeof checkSessionPatch> | null;
  readonly messages: ReturnType<typeof checkMessages> | null;
}

function check(d: TurnDeps, scope: Scope, batch: TurnBatch): { b: CheckedBatch; parts: RedisParts } {
  d.env.v.scope(scope);
  const checked = checkBatch(d.env, batch);
  try {
    const env = d.redisEnv;
    const patch =
      batch.session === undefined
        ? null
        : checkSessionPatch(env, batch.session.patch ?? {}, 'batch.session.patch');
    const messages =
      batch.messages === undefined ? null : checkMessages(env, batch.messages.items, 'batch.messages.items');
    return { b: checked, parts: { patch, messages } };
  } catch (error) {
    throw rebrand(error, 'redis');
  }
}

/**
 * The session ids the batch's durable parts name: created tasks, begun actions, the checkpoint, and task
 * updates that move a task to another session (keeping its own is no change: the task is read to know).
 * `excused`: ids named only by begun actions, whose existing key would answer with its action instead.
 */
async function attachedSessions(d: TurnDeps, scope: Scope, b: CheckedBatch) {
  const moved: string[] = [];
  for (const u of b.updates) {
    if (typeof u.patch.session_id !== 'string') continue;
    const current = await d.pg.getTask(scope, u.id);
    // A missing task: PostgreSQL says so, as the other stores do before looking at the session.
    if (current !== null && current.session_id !== u.patch.session_id) moved.push(u.patch.session_id);
  }
  const others = named([...b.creates.map((c) => c.session_id), b.checkpoint?.session_id, ...moved]);
  const begun = named(b.begins.map((a) => a.session_id));
  return {
    ids: named([...others, ...begun]),
    excused: new Set(begun.filter((id) => !others.includes(id))),
  };
}

/** True when every begun action naming one of `missing` has a key that exists (its action answers). */
async function keysExist(d: TurnDeps, scope: Scope, b: CheckedBatch, missing: readonly string[]) {
  for (const a of b.begins) {
    if (a.session_id === null || !missing.includes(a.session_id)) continue;
    if ((await d.pg.getActionByKey(scope, a.idempotency_key)) === null) return false;
  }
  return true;
}

/**
 * Randomness for a Redis half that is built more than once and must come out the same: what the first
 * build drew is handed out again, in the same order, to every later one (`rewind` before each build).
 */
function replaying(source: RandomSource): { random: RandomSource; rewind(): void } {
  const drawn: Uint8Array[] = [];
  let next = 0;
  return {
    random: (bytes) => {
      const known = drawn[next];
      next++;
      if (known !== undefined && known.length === bytes) return known.slice();
      const fresh = source(bytes);
      drawn[next - 1] = fresh.slice();
      return fresh;
    },
    rewind: () => {
      next = 0;
    },
  };
}

/** The batch without its Redis parts (and without its events, which durable.ts writes). */
function durablePart(batch: TurnBatch): TurnBatch {
  const {
    session: _session,
    messages: _messages,
    release_lease: _release,
    events: _events,
    ...durable
  } = batch;
  return durable;
}

export async function commitTurn(d: TurnDeps, scope: Scope, batch: TurnBatch): Promise<TurnResult> {
  const { b, parts } = check(d, scope, batch);
  let written = await writeTurn(d, scope, batch, b, parts);
  if (b.listOpen !== null && written.open_tasks === undefined) {
    // A batch with no durable part: the tasks (PostgreSQL's) are listed after it.
    const { session_id, limit } = b.listOpen;
    const page = await d.pg.listTasks(scope, { session_id, state: OPEN_TASK_STATES, limit });
    written = { ...written, open_tasks: page.items };
  }
  if (b.release === null) return written;
  const lease_released = await d.pg.releaseLease(scope, b.release.name, b.release.owner).catch(() => false);
  return { ...written, lease_released };
}

async function writeTurn(
  d: TurnDeps,
  scope: Scope,
  batch: TurnBatch,
  b: CheckedBatch,
  parts: RedisParts,
): Promise<TurnResult> {
  const hasDurable =
    b.creates.length + b.updates.length + b.begins.length + b.completes.length > 0 ||
    b.checkpoint !== null ||
    b.putMemory ||
    b.otherMemory !== null;
  const events = b.events;
  const sessionIds = [b.session?.id, b.messages?.session_id].filter((id): id is string => id !== undefined);
  // With run events the Redis half is pinned: every build of it comes out as the prepared one (step 6),
  // at the instant the turn holds its locks.
  let pinnedNow = d.redis.clock.now();
  const replay = replaying(d.redisEnv.random);
  const pinnedEnv: CoreEnv = { ...d.redisEnv, random: replay.random };
  let prepared: RedisHalf | null = null;
  const redisHalf = async (plan: Plan): Promise<RedisHalf> => {
    replay.rewind();
    const tx = redisRows(d.redis, plan);
    const op =
      events === null
        ? { env: d.redisEnv, tx, now: d.redis.clock.now() }
        : { env: pinnedEnv, tx, now: pinnedNow };
    const out: RedisHalf = { session: null, messages: [] };
    if (batch.session !== undefined && parts.patch !== null) {
      const { id, expected_version } = batch.session;
      out.session = await applySessionPatch(op, scope, id, expected_version, parts.patch);
    }
    if (batch.messages !== undefined && parts.messages !== null) {
      const appended = await appendChecked(op, scope, batch.messages.session_id, parts.messages);
      out.session = appended.session;
      out.messages = appended.messages;
    }
    if (prepared !== null && JSON.stringify(out) !== JSON.stringify(prepared)) {
      // Thrown before the script: nothing of it is written.
      throw new AgentStateError(
        'conflict',
        `[redis] session ${out.session?.id ?? sessionIds[0]} changed under the turn: its run events tell otherwise`,
      );
    }
    return out;
  };
  const writeRedis = () => runPlan(d.redis, redisHalf);
  let release: (() => Promise<void>) | null = null;
  try {
    // The sessions the durable parts name (attach.ts), checked holding their turn locks too.
    const attached = await attachedSessions(d, scope, b);
    const eventSession = events === null ? [] : [events.session_id];
    const locked = [...sessionIds, ...attached.ids, ...eventSession];
    if (locked.length > 0) release = await d.locks.acquire(scope.tenant_id, locked);
    pinnedNow = d.redis.clock.now();
    if (!hasDurable && events === null) {
      if (sessionIds.length === 0) return { ...EMPTY };
      return { ...EMPTY, ...(await writeRedis()) };
    }
    if (sessionIds.length > 0) {
      const half = await redisHalf(new Plan(d.redis));
      if (events !== null) prepared = half;
    }
    const missing = await missingSessions(d, scope, attached.ids);
    const refused = missing.find((id) => !attached.excused.has(id));
    if (refused !== undefined) throw sessionNotFound(refused);
    if (missing.length > 0 && !(await keysExist(d, scope, b, missing))) {
      throw sessionNotFound(missing[0] as string);
    }
    const holds = b.updates.map((u) => ({ id: u.id, version: u.expected }));
    await d.hot.hold(scope.tenant_id, scope.user_id, holds);
    let durable: TurnResult;
    try {
      durable =
        events === null
          ? await d.pg.commitTurn(scope, durablePart(batch))
          : await commitDurableWithEvents(
              d.pgDriver,
              d.env,
              scope,
              b,
              events,
              prepared ?? { session: null, messages: [] },
              pinnedNow,
            );
    } catch (error) {
      throw rebrand(error, 'postgres');
    }
    let half: RedisHalf = { session: null, messages: [] };
    try {
      await d.afterDurableCommit?.({ scope, durable });
      if (sessionIds.length > 0) half = await writeRedis();
    } catch (error) {
      throw durableCommitted(rebrand(error, 'redis'));
    }
    await d.hot.put(durable.tasks);
    return { ...durable, session: half.session, messages: half.messages };
  } catch (error) {
    throw rebrand(error, 'redis');
  } finally {
    await release?.();
  }
}
