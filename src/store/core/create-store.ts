/**
 * The store core: the one StateStore implementation. Every call is checked here first (nothing reaches the
 * driver when a check fails), then runs in one driver transaction or read; the rules live in the domain
 * modules beside this one, and the driver only stores rows.
 */
import type {
  Action,
  Checkpoint,
  MemoryItem,
  Message,
  RunEvent,
  Session,
  Task,
  TaskEvent,
} from '../../core/model.js';
import type * as t from '../types.js';
import * as actions from './actions.js';
import * as branchTasks from './branch-tasks.js';
import * as branches from './branches.js';
import * as checkpoints from './checkpoints.js';
import { commitTurnCall } from './commit-turn.js';
import type { StoreDriver } from './driver.js';
import * as events from './events.js';
import * as memory from './memory.js';
import * as messages from './messages.js';
import { checkHeadLease, checkHeadOptions, leasedHead, readSessionHead } from './session-head.js';
import * as sessions from './sessions.js';
import { MAX_SWEEP_LIMIT, StoreBase } from './store-base.js';
import * as tasks from './tasks.js';
import { checkBatch } from './turn.js';

export { MAX_SWEEP_LIMIT };

export class CoreStore extends StoreBase implements t.StateStore {
  // sessions
  createSession(scope: t.Scope, input: t.NewSession): Promise<Session> {
    return this.write(
      () => this.v.scope(scope),
      (op) => sessions.createSession(op, scope, input),
      () => true,
    );
  }
  getSession(scope: t.ReadScope, id: string): Promise<Session | null> {
    return this.read(
      () => this.scoped(scope, [id, 'session', 'session id']),
      (op) => sessions.liveSession(op, scope, id),
    );
  }
  async getSessionHead(
    scope: t.ReadScope,
    id: string,
    options: t.SessionHeadOptions = {},
  ): Promise<t.SessionHead | null> {
    const check = () => {
      this.scoped(scope, [id, 'session', 'session id']);
      return checkHeadOptions(this.env, options);
    };
    const lease = options?.lease;
    if (lease === undefined)
      return this.read(check, (op, reads) => readSessionHead(op, this.driver.fast, scope, id, reads));
    const reads = check();
    const leased = checkHeadLease(this.env, scope, lease);
    return leasedHead(this.lent, this.driver.fast, scope as t.Scope, id, reads, leased);
  }
  listSessions(scope: t.ReadScope, query: t.SessionQuery = {}): Promise<t.Page<Session>> {
    return this.read(
      () => this.scoped(scope),
      (op) => sessions.listSessions(op, scope, query),
    );
  }
  updateSession(scope: t.ReadScope, id: string, expected: number, patch: t.SessionPatch): Promise<Session> {
    const check = () => {
      this.scoped(scope, [id, 'session', 'session id']);
      this.v.positiveInt(expected, 'expected_version');
      return sessions.checkSessionPatch(this.env, patch, 'patch');
    };
    return this.write(check, (op, checked) => sessions.applySessionPatch(op, scope, id, expected, checked));
  }
  touchSession(scope: t.ReadScope, id: string): Promise<Session | null> {
    return this.write(
      () => this.scoped(scope, [id, 'session', 'session id']),
      (op) => sessions.touchSession(op, scope, id),
    );
  }
  endSession(scope: t.ReadScope, id: string): Promise<Session | null> {
    return this.write(
      () => this.scoped(scope, [id, 'session', 'session id']),
      (op) => sessions.endSession(op, scope, id),
    );
  }
  deleteSession(scope: t.ReadScope, id: string): Promise<boolean> {
    return this.write(
      () => this.scoped(scope, [id, 'session', 'session id']),
      (op) => sessions.deleteSession(op, scope, id),
    );
  }

  // branches
  forkSession(scope: t.ReadScope, id: string, input: t.NewFork): Promise<Session> {
    const check = () => {
      this.scoped(scope, [id, 'session', 'session id']);
      return branches.checkFork(this.env, input);
    };
    return this.write(check, (op, checked) => branches.forkSession(op, scope, id, checked));
  }
  rewindSession(scope: t.ReadScope, id: string, input: t.Rewind): Promise<t.RewindResult> {
    const check = () => {
      this.scoped(scope, [id, 'session', 'session id']);
      return branches.checkRewind(this.env, input);
    };
    return this.write(check, (op, checked) => branches.rewindSession(op, scope, id, checked));
  }
  listBranches(scope: t.ReadScope, id: string, query: t.PageQuery = {}): Promise<t.Page<Session>> {
    return this.read(
      () => this.scoped(scope, [id, 'session', 'session id']),
      (op) => branches.listBranches(op, scope, id, query),
    );
  }

  /** The task half of a fork or a rewind whose sessions another store holds (the tiered store's). */
  branchTasks(scope: t.ReadScope, input: branchTasks.TaskBranching): Promise<void> {
    return this.write(
      () => this.scoped(scope),
      (op) => branchTasks.branchTasks(op, input),
    );
  }
  /** For the tiered store: the fork point of a checkpoint written at `at`, and when the next message was. */
  forkPointOf(scope: t.ReadScope, id: string, seq: number | null, at: branches.CheckpointMark | null) {
    return this.read(
      () => this.scoped(scope, [id, 'session', 'session id']),
      (op) => branches.forkPointOf(op, scope, id, seq, at),
    );
  }
  /** forkSession at a point found by forkPointOf. */
  forkAt(scope: t.ReadScope, id: string, input: t.NewFork, seq: number): Promise<Session> {
    const check = () => {
      this.scoped(scope, [id, 'session', 'session id']);
      return branches.checkFork(this.env, input);
    };
    return this.write(check, (op, checked) => branches.forkSession(op, scope, id, checked, seq));
  }

  // messages
  appendMessages(scope: t.ReadScope, session_id: string, list: readonly t.NewMessage[]): Promise<Message[]> {
    const check = () => {
      this.scoped(scope, [session_id, 'session', 'session id']);
      return messages.checkMessages(this.env, list, 'messages');
    };
    return this.write(
      check,
      async (op, checked) => (await messages.appendChecked(op, scope, session_id, checked)).messages,
    );
  }
  listMessages(scope: t.ReadScope, session_id: string, query: t.MessageQuery = {}): Promise<Message[]> {
    const check = () => {
      this.scoped(scope, [session_id, 'session', 'session id']);
      return messages.checkMessageQuery(this.env, query);
    };
    return this.read(check, (op, checked) => messages.listMessages(op, scope, session_id, checked));
  }
  lastMessages(scope: t.ReadScope, session_id: string, n: number): Promise<Message[]> {
    const check = () => {
      this.scoped(scope, [session_id, 'session', 'session id']);
      return this.v.limit(n, 'n', 1, messages.MAX_MESSAGE_LIMIT);
    };
    return this.read(check, (op, count) => messages.lastMessages(op, scope, session_id, count));
  }

  // tasks
  createTask(scope: t.Scope, input: t.NewTask): Promise<Task> {
    const check = () => {
      this.v.scope(scope);
      return tasks.checkNewTask(this.env, input, 'task');
    };
    return this.write(check, (op, checked) => tasks.insertTask(op, scope, checked));
  }
  getTask(scope: t.ReadScope, id: string): Promise<Task | null> {
    return this.read(
      () => this.scoped(scope, [id, 'task', 'task id']),
      (op) => op.tx.getTask(scope, id),
    );
  }
  listTasks(scope: t.ReadScope, query: t.TaskQuery = {}): Promise<t.Page<Task>> {
    const check = () => {
      this.scoped(scope);
      return tasks.checkTaskQuery(this.env, query);
    };
    return this.read(check, (op, filter) => tasks.listTasks(op, scope, filter, query));
  }
  updateTask(scope: t.ReadScope, id: string, expected: number, patch: t.TaskPatch): Promise<Task> {
    const check = () => {
      this.scoped(scope, [id, 'task', 'task id']);
      this.v.positiveInt(expected, 'expected_version');
      return tasks.checkTaskPatch(this.env, patch, 'patch');
    };
    return this.write(check, (op, checked) => tasks.applyTaskPatch(op, scope, id, expected, checked));
  }
  listTaskEvents(scope: t.ReadScope, task_id: string): Promise<TaskEvent[]> {
    return this.read(
      () => this.scoped(scope, [task_id, 'task', 'task id']),
      (op) => tasks.listTaskEvents(op, scope, task_id),
    );
  }

  // actions
  beginAction(scope: t.Scope, input: t.NewAction): Promise<{ action: Action; created: boolean }> {
    const check = () => {
      this.v.scope(scope);
      return actions.checkNewAction(this.env, input, 'action');
    };
    return this.write(check, (op, checked) => actions.begin(op, scope, checked));
  }
  getAction(scope: t.ReadScope, id: string): Promise<Action | null> {
    return this.read(
      () => this.scoped(scope, [id, 'action', 'action id']),
      (op) => op.tx.getAction(scope, id),
    );
  }
  getActionByKey(scope: t.Scope, idempotency_key: string): Promise<Action | null> {
    const check = () => {
      this.v.scope(scope);
      this.v.name(idempotency_key, 'idempotency_key');
    };
    return this.read(check, (op) => op.tx.getActionByKey(scope, idempotency_key));
  }
  completeAction(scope: t.ReadScope, id: string, completion: t.ActionCompletion): Promise<Action> {
    const check = () => {
      this.scoped(scope, [id, 'action', 'action id']);
      return actions.checkCompletion(this.env, completion, 'completion');
    };
    return this.write(check, (op, done) => actions.complete(op, scope, id, done));
  }
  markActionUnknown(scope: t.ReadScope, id: string, note: string): Promise<Action> {
    const check = () => {
      this.scoped(scope, [id, 'action', 'action id']);
      return this.v.name(note, 'note');
    };
    return this.write(check, (op, why) =>
      actions.transition(op, scope, id, 'UNKNOWN', ['PENDING'], { note: why }),
    );
  }
  resolveAction(scope: t.ReadScope, id: string, resolution: t.ActionResolution): Promise<Action> {
    const check = () => {
      this.scoped(scope, [id, 'action', 'action id']);
      return actions.checkResolution(this.env, resolution);
    };
    return this.write(check, (op, done) =>
      actions.transition(op, scope, id, done.status, ['PENDING', 'UNKNOWN'], {
        result: done.result,
        error: done.error,
        note: done.note,
      }),
    );
  }
  recordAttempt(scope: t.ReadScope, id: string): Promise<Action> {
    return this.write(
      () => this.scoped(scope, [id, 'action', 'action id']),
      (op) => actions.recordAttempt(op, scope, id),
    );
  }
  listActions(scope: t.ReadScope, query: t.ActionQuery = {}): Promise<t.Page<Action>> {
    const check = () => {
      this.scoped(scope);
      return actions.checkActionQuery(this.env, query);
    };
    return this.read(check, (op, filter) => actions.listActions(op, scope, filter, query));
  }

  // checkpoints
  putCheckpoint(scope: t.Scope, input: t.NewCheckpoint): Promise<Checkpoint> {
    const check = () => {
      this.v.scope(scope);
      return checkpoints.checkNewCheckpoint(this.env, input, 'checkpoint');
    };
    // With no session to check, a put is one write of the driver.
    return this.write(
      check,
      (op, checked) => checkpoints.insertCheckpoint(op, scope, checked),
      (checked) => checked.session_id === null,
    );
  }
  getCheckpoint(scope: t.ReadScope, id: string): Promise<Checkpoint | null> {
    return this.read(
      () => this.scoped(scope, [id, 'checkpoint', 'checkpoint id']),
      (op) => op.tx.getCheckpoint(scope, id),
    );
  }
  latestCheckpoint(scope: t.ReadScope, run_id: string): Promise<Checkpoint | null> {
    const check = () => {
      this.scoped(scope);
      this.v.name(run_id, 'run_id');
    };
    return this.read(check, (op) => op.tx.latestCheckpoint(scope, run_id));
  }
  listCheckpoints(
    scope: t.ReadScope,
    run_id: string,
    query: t.CheckpointQuery = {},
  ): Promise<t.Page<Checkpoint>> {
    const check = () => {
      this.scoped(scope);
      this.v.name(run_id, 'run_id');
      return checkpoints.checkCheckpointQuery(this.env, query);
    };
    return this.read(check, (op, page) => checkpoints.listCheckpoints(op, scope, run_id, page));
  }
  pruneCheckpoints(scope: t.ReadScope, run_id: string, keep: number): Promise<number> {
    const check = () => {
      this.scoped(scope);
      this.v.name(run_id, 'run_id');
      this.v.nonNegativeInt(keep, 'keep');
    };
    return this.write(check, (op) => checkpoints.pruneCheckpoints(op, scope, run_id, keep));
  }

  // long-term memory
  putMemory(scope: t.Scope, input: t.NewMemory): Promise<MemoryItem> {
    const check = () => {
      this.v.scope(scope);
      return memory.checkNewMemory(this.env, input);
    };
    return this.write(check, (op, checked) => memory.writeMemory(op, scope, checked));
  }
  getMemory(scope: t.Scope, namespace: string, key: string): Promise<MemoryItem | null> {
    return this.read(
      () => this.itemKey(scope, namespace, key),
      (op) => memory.getMemory(op, scope, namespace, key),
    );
  }
  deleteMemory(scope: t.Scope, namespace: string, key: string): Promise<boolean> {
    return this.write(
      () => this.itemKey(scope, namespace, key),
      (op) => memory.deleteMemory(op, scope, namespace, key),
    );
  }
  listMemory(scope: t.Scope, namespace: string, query: t.MemoryQuery = {}): Promise<t.Page<MemoryItem>> {
    const check = () => {
      this.v.scope(scope);
      this.v.name(namespace, 'namespace');
    };
    return this.read(check, (op) => memory.listMemory(op, scope, namespace, query));
  }
  private itemKey(scope: t.Scope, namespace: string, key: string): void {
    this.v.scope(scope);
    this.v.name(namespace, 'namespace');
    this.v.name(key, 'key');
  }

  // run events
  appendRunEvents(scope: t.Scope, append: t.RunEventAppend): Promise<void> {
    const check = () => {
      this.v.scope(scope);
      return events.checkAppend(this.env, append, 'append');
    };
    return this.write(check, (op, c) => events.appendEvents(op, scope, c.session_id, c.run_id, c.events));
  }
  listRunEvents(
    scope: t.ReadScope,
    session_id: string,
    run_id: string,
    query: t.RunEventQuery = {},
  ): Promise<RunEvent[]> {
    const check = () => {
      this.scoped(scope, [session_id, 'session', 'session id']);
      this.v.name(run_id, 'run_id');
      return events.checkEventQuery(this.env, query);
    };
    return this.read(check, (op, q) => events.listEvents(op, scope, session_id, run_id, q));
  }

  // one turn
  commitTurn(scope: t.Scope, batch: t.TurnBatch): Promise<t.TurnResult> {
    return commitTurnCall(this.lent, scope, batch, () => {
      this.v.scope(scope);
      return checkBatch(this.env, batch);
    });
  }
}

/** The StateStore over `driver`: every rule of the contract, with the driver storing the rows. */
export function createStateStore(driver: StoreDriver, options: t.StoreOptions = {}): t.StateStore {
  return new CoreStore(driver, options);
}
