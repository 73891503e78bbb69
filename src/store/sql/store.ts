import { AgentStateError } from '../../core/errors.js';
import type { IdKind } from '../../core/ids.js';
import type { Checkpoint } from '../../core/model.js';
import { MissingBlobError } from '../shared/checkpoint-codec.js';
import { checkpointPageStart } from '../shared/checkpoint-query.js';
import { RESOLUTION_FIELDS } from '../shared/known-fields.js';
import * as t from '../types.js';
import { countActions } from './action-stats.js';
import * as a from './actions.js';
import { pruneCheckpointRows } from './checkpoint-prune.js';
import { listCheckpointPage, readCheckpoint } from './checkpoint-reads.js';
import { checkNewCheckpoint, insertCheckpoint } from './checkpoints.js';
import type { SqlExecutor } from './executor.js';
import * as me from './memory.js';
import * as m from './messages.js';
import * as s from './sessions.js';
import { SqlStoreBase } from './store-base.js';
import * as k from './tasks.js';
import { checkBatch, writeTurn } from './turn.js';
import { writeTurnInOneStatement } from './turn-statement.js';

export class SqlStore extends SqlStoreBase implements t.StateStore {
  // sessions
  createSession(scope: t.Scope, input: t.NewSession) {
    const check = () => {
      this.v.scope(scope);
      return s.checkNewSession(this.ctx, input);
    };
    return this.do('write', check, (tx, c) => s.insertSession(this.ctx, tx, scope, c));
  }
  getSession(scope: t.ReadScope, id: string) {
    return this.read(scope, [id, 'session', 'session id'], (q) => s.selectSession(this.ctx, q, scope, id));
  }
  listSessions(scope: t.ReadScope, query: t.SessionQuery = {}) {
    return this.read(scope, null, (q) => s.listSessionRows(this.ctx, q, scope, query));
  }
  updateSession(scope: t.ReadScope, id: string, expected: number, patch: t.SessionPatch) {
    const check = () => {
      this.v.readScope(scope);
      this.v.id(id, 'session', 'session id');
      this.v.positiveInt(expected, 'expected_version');
      return s.checkSessionPatch(this.ctx, patch, 'patch');
    };
    return this.do('write', check, (tx, c) => s.applySessionPatch(this.ctx, tx, scope, id, expected, c));
  }
  touchSession(scope: t.ReadScope, id: string) {
    return this.write(scope, [id, 'session', 'session id'], (tx) =>
      s.touchSessionRow(this.ctx, tx, scope, id),
    );
  }
  endSession(scope: t.ReadScope, id: string) {
    return this.write(scope, [id, 'session', 'session id'], (tx) => s.endSessionRow(this.ctx, tx, scope, id));
  }
  deleteSession(scope: t.ReadScope, id: string) {
    return this.write(scope, [id, 'session', 'session id'], (tx) =>
      s.deleteSessionRows(this.ctx, tx, scope, id),
    );
  }

  // messages
  appendMessages(scope: t.ReadScope, session_id: string, messages: readonly t.NewMessage[]) {
    const check = () => {
      this.v.readScope(scope);
      this.v.id(session_id, 'session', 'session id');
      return m.checkMessages(this.ctx, messages, 'messages');
    };
    return this.do(
      'write',
      check,
      async (tx, c) => (await m.appendChecked(this.ctx, tx, scope, session_id, c)).messages,
    );
  }
  listMessages(scope: t.ReadScope, session_id: string, query: t.MessageQuery = {}) {
    const id: [string, IdKind, string] = [session_id, 'session', 'session id'];
    return this.read(scope, id, (q) => m.selectMessages(this.ctx, q, scope, session_id, query));
  }
  lastMessages(scope: t.ReadScope, session_id: string, n: number) {
    const id: [string, IdKind, string] = [session_id, 'session', 'session id'];
    return this.read(scope, id, (q) => m.selectLastMessages(this.ctx, q, scope, session_id, n));
  }
  getSessionHead(scope: t.ReadScope, id: string, options: t.SessionHeadOptions = {}) {
    const check = () => {
      this.v.readScope(scope);
      this.v.id(id, 'session', 'session id');
      return m.checkSessionHeadOptions(this.ctx, options);
    };
    return this.do('read', check, (q, reads) => m.selectSessionHead(this.ctx, q, scope, id, reads));
  }

  // tasks
  createTask(scope: t.Scope, input: t.NewTask) {
    const check = () => {
      this.v.scope(scope);
      return k.checkNewTask(this.ctx, input, 'task');
    };
    return this.do('write', check, (tx, c) => k.insertTask(this.ctx, tx, scope, c));
  }
  getTask(scope: t.ReadScope, id: string) {
    return this.read(scope, [id, 'task', 'task id'], (q) => k.selectTask(q, scope, id));
  }
  listTasks(scope: t.ReadScope, query: t.TaskQuery = {}) {
    return this.read(scope, null, (q) => k.listTaskRows(this.ctx, q, scope, query));
  }
  updateTask(scope: t.ReadScope, id: string, expected: number, patch: t.TaskPatch) {
    const check = () => {
      this.v.readScope(scope);
      this.v.id(id, 'task', 'task id');
      this.v.positiveInt(expected, 'expected_version');
      return k.checkTaskPatch(this.ctx, patch, 'patch');
    };
    const oneStatement = this.driver.dialect.name === 'postgres';
    return this.do('write', check, (tx, c) =>
      k.applyTaskPatch(this.ctx, tx, scope, id, expected, c, oneStatement),
    );
  }
  listTaskEvents(scope: t.ReadScope, task_id: string) {
    return this.read(scope, [task_id, 'task', 'task id'], (q) => k.selectTaskEvents(q, scope, task_id));
  }

  // actions
  beginAction(scope: t.Scope, input: t.NewAction) {
    const check = () => {
      this.v.scope(scope);
      return a.checkNewAction(this.ctx, input, 'action');
    };
    return this.do('write', check, (tx, c) => a.begin(this.ctx, tx, scope, c));
  }
  getAction(scope: t.ReadScope, id: string) {
    return this.read(scope, [id, 'action', 'action id'], (q) => a.selectAction(q, scope, id));
  }
  getActionByKey(scope: t.Scope, key: string) {
    const check = () => {
      this.v.scope(scope);
      return this.v.name(key, 'idempotency_key');
    };
    return this.do('read', check, (q) => a.selectActionByKey(q, scope, key));
  }
  completeAction(scope: t.ReadScope, id: string, completion: t.ActionCompletion) {
    return this.changeAction(scope, id, () => {
      const done = a.checkCompletion(this.ctx, completion, 'completion');
      return { to: done.status, from: ['PENDING'], change: { result: done.result, error: done.error } };
    });
  }
  markActionUnknown(scope: t.ReadScope, id: string, note: string) {
    return this.changeAction(scope, id, () => ({
      to: 'UNKNOWN',
      from: ['PENDING'],
      change: { note: this.v.name(note, 'note') },
    }));
  }
  resolveAction(scope: t.ReadScope, id: string, resolution: t.ActionResolution) {
    return this.changeAction(scope, id, () => {
      const done = a.checkCompletion(this.ctx, resolution, 'resolution', RESOLUTION_FIELDS);
      const note = this.v.name(resolution.note, 'resolution.note');
      return {
        to: done.status,
        from: ['PENDING', 'UNKNOWN'],
        change: { result: done.result, error: done.error, note },
      };
    });
  }
  recordAttempt(scope: t.ReadScope, id: string) {
    return this.changeAction(scope, id, () => ({
      to: 'PENDING',
      from: ['PENDING'],
      change: { attempts: 1 },
    }));
  }
  private changeAction(
    scope: t.ReadScope,
    id: string,
    plan: () => {
      to: t.ActionCompletion['status'] | 'UNKNOWN' | 'PENDING';
      from: string[];
      change: a.ActionChange;
    },
  ) {
    const check = () => {
      this.v.readScope(scope);
      this.v.id(id, 'action', 'action id');
      return plan();
    };
    return this.do('write', check, (tx, p) =>
      a.transition(this.ctx, tx, scope, id, p.to, p.from as ('PENDING' | 'UNKNOWN')[], p.change),
    );
  }
  listActions(scope: t.ReadScope, query: t.ActionQuery = {}) {
    return this.read(scope, null, (q) => a.listActionRows(this.ctx, q, scope, query));
  }
  /** PENDING and UNKNOWN actions across all tenants, counted on one snapshot (action-stats.ts). */
  actionStats(): Promise<t.ActionStats> {
    return this.do(
      'snapshot',
      () => undefined,
      (q) => countActions(q),
    );
  }

  // checkpoints
  putCheckpoint(scope: t.Scope, input: t.NewCheckpoint) {
    const check = () => {
      this.v.scope(scope);
      return checkNewCheckpoint(this.ctx, input, 'checkpoint');
    };
    // PostgreSQL: two single statements (see insertCheckpoint) instead of a transaction's four round trips.
    if (this.driver.dialect.name === 'postgres') {
      // A put naming a session that cannot go the one-statement way runs in a transaction (attach.ts).
      return this.do('read', check, (q, c) =>
        insertCheckpoint(this.ctx, q, scope, c, true, (fn) => this.driver.transaction(fn)),
      );
    }
    return this.do('write', check, (tx, c) => insertCheckpoint(this.ctx, tx, scope, c));
  }
  getCheckpoint(scope: t.ReadScope, id: string) {
    const check = () => {
      this.v.readScope(scope);
      return this.v.id(id, 'checkpoint', 'checkpoint id');
    };
    return this.readCheckpoints(check, (q) => readCheckpoint(q, scope, { id }));
  }
  latestCheckpoint(scope: t.ReadScope, run_id: string) {
    const check = () => {
      this.v.readScope(scope);
      return this.v.name(run_id, 'run_id');
    };
    return this.readCheckpoints(check, (q) => readCheckpoint(q, scope, { run_id }));
  }
  listCheckpoints(
    scope: t.ReadScope,
    run_id: string,
    query: t.CheckpointQuery = {},
  ): Promise<t.Page<Checkpoint>> {
    const check = () => {
      this.v.readScope(scope);
      this.v.name(run_id, 'run_id');
      this.v.record(query, 'query');
      const limit = this.v.limit(query.limit, 'limit', 20, t.MAX_PAGE_LIMIT);
      const start = checkpointPageStart(query, (message) => this.v.fail(message));
      const before = start === null ? null : this.v.id(start, 'checkpoint', 'before');
      return { limit, before };
    };
    return this.readCheckpoints(check, (q, c) => listCheckpointPage(q, scope, run_id, c.limit, c.before));
  }
  /**
   * Checkpoint reads run as single statements (rows, then their blobs), without a transaction's round
   * trips. Blobs are only ever removed with the checkpoints that need them, so the one race is a prune
   * between the two statements: then the read runs again on one snapshot.
   */
  private async readCheckpoints<C, T>(check: () => C, work: (q: SqlExecutor, checked: C) => Promise<T>) {
    try {
      return await this.do('read', check, work);
    } catch (error) {
      if (!(error instanceof AgentStateError && error.cause instanceof MissingBlobError)) throw error;
      return this.do('snapshot', check, work);
    }
  }
  pruneCheckpoints(scope: t.ReadScope, run_id: string, keep: number) {
    const check = () => {
      this.v.readScope(scope);
      this.v.name(run_id, 'run_id');
      return this.v.nonNegativeInt(keep, 'keep');
    };
    return this.do('write', check, (tx) => pruneCheckpointRows(tx, scope, run_id, keep));
  }

  // long-term memory
  putMemory(scope: t.Scope, input: t.NewMemory) {
    const check = () => {
      this.v.scope(scope);
      return me.checkNewMemory(this.ctx, input);
    };
    return this.do('statement', check, (q, c) => me.upsertMemory(this.ctx, q, scope, c));
  }
  private memoryKey(scope: t.Scope, namespace: string, key: string) {
    return () => {
      this.v.scope(scope);
      this.v.name(namespace, 'namespace');
      this.v.name(key, 'key');
    };
  }
  getMemory(scope: t.Scope, namespace: string, key: string) {
    return this.do('read', this.memoryKey(scope, namespace, key), (q) =>
      me.selectMemory(this.ctx, q, scope, namespace, key),
    );
  }
  deleteMemory(scope: t.Scope, namespace: string, key: string) {
    const work = (tx: SqlExecutor) => me.deleteMemoryRow(this.ctx, tx, scope, namespace, key);
    return this.do('write', this.memoryKey(scope, namespace, key), work);
  }
  listMemory(scope: t.Scope, namespace: string, query: t.MemoryQuery = {}) {
    const check = () => {
      this.v.scope(scope);
      return this.v.name(namespace, 'namespace');
    };
    return this.do('read', check, (q) => me.listMemoryRows(this.ctx, q, scope, namespace, query));
  }

  // one turn, atomically
  commitTurn(scope: t.Scope, batch: t.TurnBatch) {
    const check = () => {
      this.v.scope(scope);
      return checkBatch(this.ctx, batch);
    };
    if (this.driver.dialect.name !== 'postgres')
      return this.do('write', check, (tx, b) => writeTurn(this.ctx, tx, scope, b));
    // PostgreSQL: the usual turn as one statement; any other, or one it refuses, as a transaction.
    return this.do('statement', check, async (q, b) => {
      const written = await writeTurnInOneStatement(this.ctx, q, scope, b);
      if (written !== null) return written;
      return this.driver.transaction((tx) => writeTurn(this.ctx, tx, scope, b, true));
    });
  }
}
