/**
 * The tiered StateStore: a Redis store (sessions, messages) and a PostgreSQL store (everything durable,
 * run events included: durable.ts says why) opened side by side; each call goes to the tier that owns its
 * records, tasks get hot copies in Redis (hot.ts), version-changing session calls and message appends
 * hold the session's turn lock (lock.ts) and commitTurn spans both tiers (turn.ts). Every error starts
 * with `[tiered]` (errors.ts).
 */

import { closedError, invalidRequest } from '../../core/errors.js';
import { OPEN_TASK_STATES, type Task } from '../../core/model.js';
import { checkNewAction } from '../core/actions.js';
import { type CheckpointMark, checkFork, checkRewind } from '../core/branches.js';
import { checkNewCheckpoint } from '../core/checkpoints.js';
import { CoreStore } from '../core/create-store.js';
import { checkMessages } from '../core/messages.js';
import { checkHeadLease, checkHeadOptions, leaseThenHead } from '../core/session-head.js';
import { checkNewTask, checkTaskPatch } from '../core/tasks.js';
import { CHECKPOINT_FIELDS } from '../shared/known-fields.js';
import { checkNextRunOption, composeNextRun } from '../shared/next-run.js';
import { SqlCoreStore } from '../sql/core-store.js';
import type * as t from '../types.js';
import { MAX_PAGE_LIMIT } from '../types.js';
import { named, withOwnSessions } from './attach.js';
import { ADAPTER, rebrand, type Tier } from './errors.js';
import { commitTurn, type TurnDeps } from './turn.js';

export class TieredStore implements t.StateStore {
  readonly adapter = ADAPTER;
  readonly capabilities: t.StoreCapabilities = { multiProcess: true, durable: true };
  private closing: Promise<void> | null = null;
  private readonly redis: t.StateStore;
  private readonly pg: t.StateStore;
  private readonly redisCore: CoreStore;
  private readonly pgCore: CoreStore;

  constructor(
    private readonly deps: TurnDeps,
    redis: t.StateStore,
  ) {
    this.redis = redis;
    this.pg = deps.pg;
    // Both halves are store cores: a fork's task half runs in PostgreSQL's.
    if (!(redis instanceof CoreStore) || !(deps.pg instanceof CoreStore))
      throw new TypeError('tiered halves must be store cores');
    this.redisCore = redis;
    this.pgCore = deps.pg;
  }

  /** Open check, then `work`; errors come out under the tiered store's name. */
  private async run<T>(tier: Tier, work: () => Promise<T>): Promise<T> {
    if (this.closing !== null) throw closedError(ADAPTER);
    try {
      return await work();
    } catch (error) {
      throw rebrand(error, tier);
    }
  }

  /** The call `name` of one tier's store as it is, its errors under the tiered store's name. */
  private pass<K extends keyof t.StateStore>(tier: Tier, name: K): t.StateStore[K] {
    const call = (...args: unknown[]) =>
      this.run(tier, () => {
        const store = tier === 'redis' ? this.redis : this.pg;
        return (store[name] as (...args: unknown[]) => Promise<unknown>).apply(store, args);
      });
    return call as t.StateStore[K];
  }

  /** Checks a read scope and a session id, then runs `work` holding that session's turn lock. */
  private locked<T>(scope: t.ReadScope, id: string, work: () => Promise<T>): Promise<T> {
    return this.run('redis', () => {
      this.deps.env.v.readScope(scope);
      this.deps.env.v.id(id, 'session', 'session id');
      return this.deps.locks.with(scope.tenant_id, [id], work);
    });
  }

  // sessions and messages: Redis
  createSession = this.pass('redis', 'createSession');
  getSession = this.pass('redis', 'getSession');
  listSessions = this.pass('redis', 'listSessions');
  updateSession: t.StateStore['updateSession'] = (s, id, expected, patch) =>
    this.locked(s, id, () => this.redis.updateSession(s, id, expected, patch));
  touchSession = this.pass('redis', 'touchSession');
  endSession: t.StateStore['endSession'] = (s, id) => this.locked(s, id, () => this.redis.endSession(s, id));
  deleteSession: t.StateStore['deleteSession'] = (s, id) =>
    this.locked(s, id, () => this.redis.deleteSession(s, id));
  // branches: sessions and messages in Redis, the tasks' half in PostgreSQL
  forkSession: t.StateStore['forkSession'] = (s, id, input) =>
    this.locked(s, id, async () => {
      const checked = checkFork(this.deps.env, input);
      let at: CheckpointMark | null = null;
      if (checked.checkpoint_id !== null) {
        const checkpoint = await this.run('postgres', () =>
          this.pg.getCheckpoint(s, checked.checkpoint_id ?? ''),
        );
        if (checkpoint === null || checkpoint.session_id !== id)
          throw invalidRequest(
            `[tiered] fork.checkpoint_id ${checked.checkpoint_id} is not a checkpoint of session ${id}`,
          );
        at = checkpoint;
      }
      const point = await this.redisCore.forkPointOf(s, id, checked.at_seq, at);
      if (checked.at_seq !== null && checked.at_seq > point.seq)
        throw invalidRequest(
          `[tiered] fork.at_seq ${checked.at_seq} is after the session's last message (seq ${point.seq})`,
        );
      const tasks = { from: point.session, seq: point.seq, cut: point.cut, moveTo: null };
      await this.run('postgres', () => this.pgCore.branchTasks(s, { ...tasks, copyTo: null }));
      const fork = await this.redisCore.forkAt(s, id, input, point.seq);
      await this.run('postgres', () => this.pgCore.branchTasks(s, { ...tasks, copyTo: fork }));
      return fork;
    });
  rewindSession: t.StateStore['rewindSession'] = (s, id, input) =>
    this.locked(s, id, async () => {
      const checked = checkRewind(this.deps.env, input);
      const point = await this.redisCore.forkPointOf(s, id, checked.at_seq, null);
      const tasks = { from: point.session, seq: point.seq, cut: point.cut };
      await this.run('postgres', () => this.pgCore.branchTasks(s, { ...tasks, copyTo: null, moveTo: null }));
      const result = await this.redis.rewindSession(s, id, input);
      await this.run('postgres', () =>
        this.pgCore.branchTasks(s, { ...tasks, copyTo: result.session, moveTo: result.branch }),
      );
      return result;
    });
  listBranches = this.pass('redis', 'listBranches');

  /** Under the session's turn lock: a turn with run events has told what seqs its messages get (turn.ts). */
  appendMessages: t.StateStore['appendMessages'] = (s, id, m) =>
    this.run('redis', () => {
      const { env } = this.deps;
      env.v.readScope(s);
      env.v.id(id, 'session', 'session id');
      checkMessages(env, m, 'messages');
      return this.deps.locks.with(s.tenant_id, [id], () => this.redis.appendMessages(s, id, m));
    });
  listMessages = this.pass('redis', 'listMessages');
  lastMessages = this.pass('redis', 'lastMessages');
  getSessionHead: t.StateStore['getSessionHead'] = async (s, id, options = {}) => {
    // The lease, when asked, from PostgreSQL (where leases live), taken before the head is read.
    const { lease: leaseAsked, ...unleased } = options ?? {};
    if (leaseAsked === undefined) return this.unleasedHead(s, id, unleased);
    // Everything checked before the lease is taken.
    const { env } = this.deps;
    env.v.readScope(s);
    env.v.id(id, 'session', 'session id');
    checkHeadOptions(env, options);
    const lease = checkHeadLease(env, s, leaseAsked);
    return leaseThenHead({
      acquire: () => this.acquireLease(s as t.Scope, lease.name, lease.owner, lease.ttl_ms),
      release: () => this.releaseLease(s as t.Scope, lease.name, lease.owner),
      head: () => this.unleasedHead(s, id, unleased),
    });
  };
  private unleasedHead: t.StateStore['getSessionHead'] = async (s, id, options = {}) => {
    // The head from Redis; the open tasks, when asked, from PostgreSQL (where tasks live).
    // The next run's checkpoint label, when asked, from PostgreSQL too (where checkpoints live).
    const { open_tasks: openTasks, next_run: nextRunAsked, ...rest } = options ?? {};
    if (
      openTasks !== undefined &&
      (!Number.isInteger(openTasks) || openTasks < 1 || openTasks > MAX_PAGE_LIMIT)
    ) {
      throw invalidRequest(`[tiered] options.open_tasks must be an integer from 1 to ${MAX_PAGE_LIMIT}`);
    }
    const nextRun = checkNextRunOption(nextRunAsked, '[tiered] ');
    let head = await this.run('redis', () => this.redis.getSessionHead(s, id, rest));
    if (head === null) return null;
    if (openTasks !== undefined) {
      const page = await this.listTasks(s, { state: OPEN_TASK_STATES, limit: openTasks });
      head = { ...head, open_tasks: page.items };
    }
    if (!nextRun) return head;
    const next = await composeNextRun(id, head.last_message?.seq ?? 0, (run) =>
      this.latestCheckpoint(s, run),
    );
    return { ...head, next_run: next };
  };

  // tasks: PostgreSQL, with hot copies in Redis
  createTask: t.StateStore['createTask'] = (s, input) =>
    this.run('postgres', async () => {
      this.deps.env.v.scope(s);
      const checked = checkNewTask(this.deps.env, input, 'task');
      const task = await withOwnSessions(this.deps, s, named([checked.session_id]), () =>
        this.pg.createTask(s, input),
      );
      await this.deps.hot.put([task]);
      return task;
    });
  getTask: t.StateStore['getTask'] = (s, id) =>
    this.run('postgres', async () => {
      const { v } = this.deps.env;
      v.readScope(s);
      v.id(id, 'task', 'task id');
      if (s.user_id !== undefined) {
        const hot = await this.deps.hot.read(s.tenant_id, s.user_id, id);
        if (hot !== undefined) return hot;
      }
      const task = await this.pg.getTask(s, id);
      if (task !== null) await this.deps.hot.put([task]);
      return task;
    });
  listTasks = this.pass('postgres', 'listTasks');
  updateTask: t.StateStore['updateTask'] = (s, id, expected, patch) =>
    this.run('postgres', async () => {
      const { v } = this.deps.env;
      v.readScope(s);
      v.id(id, 'task', 'task id');
      v.positiveInt(expected, 'expected_version');
      const checked = checkTaskPatch(this.deps.env, patch, 'patch');
      // A new session must be a live one of the task's owner; keeping the one it has is no change.
      const moving = typeof checked.session_id === 'string';
      const current = moving || s.user_id === undefined ? await this.pg.getTask(s, id) : null;
      const owner = s.user_id ?? current?.user_id;
      const attach =
        moving && current !== null && current.session_id !== checked.session_id ? [checked.session_id] : [];
      const write = async () => {
        if (owner !== undefined) {
          await this.run('redis', () => this.deps.hot.hold(s.tenant_id, owner, [{ id, version: expected }]));
        }
        return this.pg.updateTask(s, id, expected, patch);
      };
      const task: Task =
        owner === undefined
          ? await write()
          : await withOwnSessions(
              this.deps,
              { tenant_id: s.tenant_id, user_id: owner },
              named(attach),
              write,
            );
      await this.deps.hot.put([task]);
      return task;
    });
  listTaskEvents = this.pass('postgres', 'listTaskEvents');

  // actions, checkpoints, memory, leases, request keys: PostgreSQL
  beginAction: t.StateStore['beginAction'] = (s, input) =>
    this.run('postgres', () => {
      this.deps.env.v.scope(s);
      const checked = checkNewAction(this.deps.env, input, 'action');
      const begin = () => this.pg.beginAction(s, input);
      // A key that exists answers with its action whatever the session (as in the other stores).
      return withOwnSessions(this.deps, s, named([checked.session_id]), begin, async () => {
        const existing = await this.pg.getActionByKey(s, checked.idempotency_key);
        return existing === null ? null : begin;
      });
    });
  getAction = this.pass('postgres', 'getAction');
  getActionByKey = this.pass('postgres', 'getActionByKey');
  completeAction = this.pass('postgres', 'completeAction');
  markActionUnknown = this.pass('postgres', 'markActionUnknown');
  resolveAction = this.pass('postgres', 'resolveAction');
  recordAttempt = this.pass('postgres', 'recordAttempt');
  listActions = this.pass('postgres', 'listActions');

  putCheckpoint: t.StateStore['putCheckpoint'] = (s, input) =>
    this.run('postgres', () => {
      const { v } = this.deps.env;
      v.scope(s);
      v.record(input, 'checkpoint', CHECKPOINT_FIELDS);
      const session = v.optionalId(input.session_id, 'session', 'checkpoint.session_id');
      // The rest of the input is checked by PostgreSQL's store (a refused one first, before `not_found`).
      return withOwnSessions(
        this.deps,
        s,
        named([session]),
        () => this.pg.putCheckpoint(s, input),
        async () => {
          checkNewCheckpoint(this.deps.env, input, 'checkpoint');
          return null;
        },
      );
    });
  getCheckpoint = this.pass('postgres', 'getCheckpoint');
  latestCheckpoint = this.pass('postgres', 'latestCheckpoint');
  listCheckpoints = this.pass('postgres', 'listCheckpoints');
  pruneCheckpoints = this.pass('postgres', 'pruneCheckpoints');

  putMemory = this.pass('postgres', 'putMemory');
  getMemory = this.pass('postgres', 'getMemory');
  deleteMemory = this.pass('postgres', 'deleteMemory');
  listMemory = this.pass('postgres', 'listMemory');

  acquireLease = this.pass('postgres', 'acquireLease');
  releaseLease = this.pass('postgres', 'releaseLease');
  claimRequestKey = this.pass('postgres', 'claimRequestKey');
  completeRequestKey = this.pass('postgres', 'completeRequestKey');
  releaseRequestKey = this.pass('postgres', 'releaseRequestKey');
  renewRequestKey = this.pass('postgres', 'renewRequestKey');

  commitTurn: t.StateStore['commitTurn'] = (s, batch) =>
    this.run('redis', () => commitTurn(this.deps, s, batch));

  // run events: PostgreSQL, beside the run's tasks, actions and checkpoints (the session read from Redis)
  appendRunEvents = this.pass('postgres', 'appendRunEvents');
  listRunEvents = this.pass('postgres', 'listRunEvents');

  /**
   * Expired sessions and their messages (Redis; the count returned), then PostgreSQL's expired memory,
   * leases, request keys and run events.
   */
  sweepExpired: t.StateStore['sweepExpired'] = (limit) =>
    this.run('redis', async () => {
      const removed = await this.redis.sweepExpired(limit);
      await this.run('postgres', () => this.pg.sweepExpired(limit));
      return removed;
    });

  /** Sessions live in Redis: its per-status counts. */
  sessionStats = this.pass('redis', 'sessionStats');
  /** Actions live in PostgreSQL: its indexed counts (the Redis tier holds no actions). */
  actionStats = this.pass('postgres', 'actionStats');
  /** Tasks, actions and checkpoints live in PostgreSQL; the hot copies of deleted tasks become tombstones. */
  sweepRetention: t.StateStore['sweepRetention'] = (cutoffs, limit) =>
    this.run('postgres', async () => {
      if (!(this.pg instanceof SqlCoreStore)) return this.pg.sweepRetention(cutoffs, limit);
      const swept = await this.pg.sweepRetentionDetailed(cutoffs, limit);
      // A tombstone at the highest version: no late write-through or read can bring the copy back.
      await this.run('redis', () =>
        Promise.all(
          swept.deleted_tasks.map((task) =>
            this.deps.hot.hold(task.tenant_id, task.user_id, [
              { id: task.id, version: Number.MAX_SAFE_INTEGER },
            ]),
          ),
        ),
      );
      return { tasks: swept.tasks, actions: swept.actions, checkpoints: swept.checkpoints };
    });

  async ping(): Promise<boolean> {
    if (this.closing !== null) throw closedError(ADAPTER);
    const [redis, pg] = await Promise.all([this.redis.ping(), this.pg.ping()]);
    return redis && pg;
  }

  close(): Promise<void> {
    this.closing ??= Promise.all([this.redis.close(), this.pg.close()]).then(() => undefined);
    return this.closing;
  }
}
