/**
 * The in-process `memory:` store: every StateStore rule, kept in Maps. For tests and prototypes; one process
 * only, nothing survives it. Each call runs synchronously inside one undo-logged transaction, so a call is
 * atomic and concurrent callers see one call's effects entirely or not at all.
 */

import { cryptoRandom, systemClock } from '../../core/clock.js';
import { closedError } from '../../core/errors.js';
import type {
  Action,
  Checkpoint,
  MemoryItem,
  Message,
  Session,
  SessionStatus,
  Task,
  TaskEvent,
} from '../../core/model.js';
import { OPEN_TASK_STATES } from '../../core/model.js';
import { runIdFor } from '../../core/run-id.js';
import { checkNextRunOption } from '../shared/next-run.js';
import { checkRetention } from '../shared/retention.js';
import {
  type ActionCompletion,
  type ActionQuery,
  type ActionResolution,
  type ActionStats,
  type CheckpointQuery,
  DEFAULT_SESSION_TTL_SECONDS,
  type Lease,
  type MemoryQuery,
  type MessageQuery,
  type NewAction,
  type NewCheckpoint,
  type NewMemory,
  type NewMessage,
  type NewSession,
  type NewTask,
  type Page,
  type ReadScope,
  type RequestKeyClaim,
  type RetentionCutoffs,
  type RetentionSweep,
  type Scope,
  type SessionHead,
  type SessionHeadOptions,
  type SessionPatch,
  type SessionQuery,
  type StateStore,
  type StoreCapabilities,
  type StoredResponse,
  type StoreOptions,
  type TaskPatch,
  type TaskQuery,
  type TurnBatch,
  type TurnResult,
} from '../types.js';
import * as actions from './actions.js';
import * as checkpoints from './checkpoints.js';
import * as claims from './claims.js';
import { type Ctx, createTables, type Env, type Tables, Tx } from './db.js';
import * as items from './items.js';
import * as messages from './messages.js';
import * as retention from './retention.js';
import * as sessions from './sessions.js';
import * as tasks from './tasks.js';
import { checkSessionHeadOptions } from './tasks.js';
import { commitTurn } from './turn.js';
import { ADAPTER, fail, positiveInt } from './validate.js';

/** Largest number of sessions one sweep may remove. */
export const MAX_SWEEP_LIMIT = 100_000;

export class MemoryStore implements StateStore {
  readonly adapter = ADAPTER;
  readonly capabilities: StoreCapabilities = { multiProcess: false, durable: false };
  private readonly tables: Tables = createTables();
  private readonly env: Env;
  private seq = 0;
  private closed = false;

  constructor(options: StoreOptions = {}) {
    this.env = {
      clock: options.clock ?? systemClock,
      random: options.random ?? cryptoRandom,
      defaultTtlSeconds:
        options.defaultSessionTtlSeconds === undefined
          ? DEFAULT_SESSION_TTL_SECONDS
          : positiveInt(options.defaultSessionTtlSeconds, 'defaultSessionTtlSeconds'),
    };
  }

  /** Runs one call as a transaction: on any error every write of the call is undone. */
  private async run<T>(work: (c: Ctx) => T): Promise<T> {
    if (this.closed) throw closedError(ADAPTER);
    const tx = new Tx();
    const c: Ctx = {
      t: this.tables,
      tx,
      now: this.env.clock.now(),
      random: this.env.random,
      defaultTtlSeconds: this.env.defaultTtlSeconds,
      nextSeq: () => ++this.seq,
    };
    try {
      return work(c);
    } catch (error) {
      tx.rollback();
      throw error;
    }
  }

  createSession(scope: Scope, input: NewSession): Promise<Session> {
    return this.run((c) => sessions.createSession(c, scope, input));
  }
  getSession(scope: ReadScope, id: string): Promise<Session | null> {
    return this.run((c) => sessions.getSession(c, scope, id));
  }
  listSessions(scope: ReadScope, query?: SessionQuery): Promise<Page<Session>> {
    return this.run((c) => sessions.listSessions(c, scope, query));
  }
  updateSession(scope: ReadScope, id: string, expected: number, patch: SessionPatch): Promise<Session> {
    return this.run((c) => sessions.updateSession(c, scope, id, expected, patch));
  }
  touchSession(scope: ReadScope, id: string): Promise<Session | null> {
    return this.run((c) => sessions.touchSession(c, scope, id));
  }
  endSession(scope: ReadScope, id: string): Promise<Session | null> {
    return this.run((c) => sessions.endSession(c, scope, id));
  }
  deleteSession(scope: ReadScope, id: string): Promise<boolean> {
    return this.run((c) => sessions.deleteSession(c, scope, id));
  }

  appendMessages(scope: ReadScope, session_id: string, list: readonly NewMessage[]): Promise<Message[]> {
    return this.run((c) => messages.appendMessages(c, scope, session_id, list));
  }
  listMessages(scope: ReadScope, session_id: string, query?: MessageQuery): Promise<Message[]> {
    return this.run((c) => messages.listMessages(c, scope, session_id, query));
  }
  lastMessages(scope: ReadScope, session_id: string, n: number): Promise<Message[]> {
    return this.run((c) => messages.lastMessages(c, scope, session_id, n));
  }
  getSessionHead(
    scope: ReadScope,
    id: string,
    options: SessionHeadOptions = {},
  ): Promise<SessionHead | null> {
    return this.run((c) => {
      const session = sessions.getSession(c, scope, id);
      const openTasks = checkSessionHeadOptions(options);
      const nextRun = checkNextRunOption(options.next_run, '[memory] ');
      if (session === null) return null;
      const last = messages.lastMessages(c, scope, id, 1)[0] ?? null;
      let head: SessionHead = { session, last_message: last };
      if (openTasks !== null) {
        const open = tasks.listTasks(c, scope, { state: OPEN_TASK_STATES, limit: openTasks });
        head = { ...head, open_tasks: open.items };
      }
      if (nextRun) {
        const runId = runIdFor(id, last?.seq ?? 0);
        const label = checkpoints.latestCheckpoint(c, scope, runId)?.label ?? null;
        head = { ...head, next_run: { id: runId, checkpoint_label: label } };
      }
      return head;
    });
  }

  createTask(scope: Scope, input: NewTask): Promise<Task> {
    return this.run((c) => tasks.createTask(c, scope, input));
  }
  getTask(scope: ReadScope, id: string): Promise<Task | null> {
    return this.run((c) => tasks.getTask(c, scope, id));
  }
  listTasks(scope: ReadScope, query?: TaskQuery): Promise<Page<Task>> {
    return this.run((c) => tasks.listTasks(c, scope, query));
  }
  updateTask(scope: ReadScope, id: string, expected: number, patch: TaskPatch): Promise<Task> {
    return this.run((c) => tasks.updateTask(c, scope, id, expected, patch));
  }
  listTaskEvents(scope: ReadScope, task_id: string): Promise<TaskEvent[]> {
    return this.run((c) => tasks.listTaskEvents(c, scope, task_id));
  }

  beginAction(scope: Scope, input: NewAction): Promise<{ action: Action; created: boolean }> {
    return this.run((c) => actions.beginAction(c, scope, input));
  }
  getAction(scope: ReadScope, id: string): Promise<Action | null> {
    return this.run((c) => actions.getAction(c, scope, id));
  }
  getActionByKey(scope: Scope, idempotency_key: string): Promise<Action | null> {
    return this.run((c) => actions.getActionByKey(c, scope, idempotency_key));
  }
  completeAction(scope: ReadScope, id: string, completion: ActionCompletion): Promise<Action> {
    return this.run((c) => actions.completeAction(c, scope, id, completion));
  }
  markActionUnknown(scope: ReadScope, id: string, note: string): Promise<Action> {
    return this.run((c) => actions.markActionUnknown(c, scope, id, note));
  }
  resolveAction(scope: ReadScope, id: string, resolution: ActionResolution): Promise<Action> {
    return this.run((c) => actions.resolveAction(c, scope, id, resolution));
  }
  recordAttempt(scope: ReadScope, id: string): Promise<Action> {
    return this.run((c) => actions.recordAttempt(c, scope, id));
  }
  listActions(scope: ReadScope, query?: ActionQuery): Promise<Page<Action>> {
    return this.run((c) => actions.listActions(c, scope, query));
  }

  putCheckpoint(scope: Scope, input: NewCheckpoint): Promise<Checkpoint> {
    return this.run((c) => checkpoints.putCheckpoint(c, scope, input));
  }
  getCheckpoint(scope: ReadScope, id: string): Promise<Checkpoint | null> {
    return this.run((c) => checkpoints.getCheckpoint(c, scope, id));
  }
  latestCheckpoint(scope: ReadScope, run_id: string): Promise<Checkpoint | null> {
    return this.run((c) => checkpoints.latestCheckpoint(c, scope, run_id));
  }
  listCheckpoints(scope: ReadScope, run_id: string, query?: CheckpointQuery): Promise<Page<Checkpoint>> {
    return this.run((c) => checkpoints.listCheckpoints(c, scope, run_id, query));
  }
  pruneCheckpoints(scope: ReadScope, run_id: string, keep: number): Promise<number> {
    return this.run((c) => checkpoints.pruneCheckpoints(c, scope, run_id, keep));
  }

  putMemory(scope: Scope, input: NewMemory): Promise<MemoryItem> {
    return this.run((c) => items.putMemory(c, scope, input));
  }
  getMemory(scope: Scope, namespace: string, key: string): Promise<MemoryItem | null> {
    return this.run((c) => items.getMemory(c, scope, namespace, key));
  }
  deleteMemory(scope: Scope, namespace: string, key: string): Promise<boolean> {
    return this.run((c) => items.deleteMemory(c, scope, namespace, key));
  }
  listMemory(scope: Scope, namespace: string, query?: MemoryQuery): Promise<Page<MemoryItem>> {
    return this.run((c) => items.listMemory(c, scope, namespace, query));
  }

  commitTurn(scope: Scope, batch: TurnBatch): Promise<TurnResult> {
    return this.run((c) => commitTurn(c, scope, batch));
  }

  acquireLease(scope: Scope, name: string, owner: string, ttl_ms: number): Promise<Lease | null> {
    return this.run((c) => claims.acquireLease(c, scope, name, owner, ttl_ms));
  }
  releaseLease(scope: Scope, name: string, owner: string): Promise<boolean> {
    return this.run((c) => claims.releaseLease(c, scope, name, owner));
  }
  claimRequestKey(
    scope: Scope,
    key: string,
    hash: string,
    ttl_seconds: number,
    in_progress_ttl_seconds?: number,
  ): Promise<RequestKeyClaim> {
    return this.run((c) => claims.claimRequestKey(c, scope, key, hash, ttl_seconds, in_progress_ttl_seconds));
  }
  completeRequestKey(scope: Scope, key: string, response: StoredResponse): Promise<void> {
    return this.run((c) => claims.completeRequestKey(c, scope, key, response));
  }
  releaseRequestKey(scope: Scope, key: string): Promise<void> {
    return this.run((c) => claims.releaseRequestKey(c, scope, key));
  }

  sweepExpired(limit: number): Promise<number> {
    return this.run((c) => {
      const max = positiveInt(limit, 'limit');
      if (max > MAX_SWEEP_LIMIT) fail(`limit must be at most ${MAX_SWEEP_LIMIT}, got ${max}`);
      const removed = sessions.sweepExpired(c, max);
      items.sweepMemory(c);
      claims.sweepClaims(c);
      return removed;
    });
  }

  sessionStats(): Promise<Record<SessionStatus, number>> {
    return this.run((c) => retention.sessionStats(c));
  }

  actionStats(): Promise<ActionStats> {
    return this.run((c) => retention.actionStats(c));
  }

  sweepRetention(cutoffs: RetentionCutoffs, limit: number): Promise<RetentionSweep> {
    return this.run((c) => retention.sweepRetention(c, checkRetention(ADAPTER, cutoffs, limit)));
  }

  /**
   * What the Maps hold right now for one tenant, expired or not: sessions and messages. For harnesses that
   * count what a sweep left (not part of the StateStore contract).
   */
  rawCounts(tenant_id: string): { sessions: number; messages: number } {
    let sessions = 0;
    let messages = 0;
    for (const [id, { rec }] of this.tables.sessions) {
      if (rec.tenant_id !== tenant_id) continue;
      sessions++;
      messages += this.tables.messages.get(id)?.length ?? 0;
    }
    return { sessions, messages };
  }

  ping(): Promise<boolean> {
    return this.run(() => true);
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}
