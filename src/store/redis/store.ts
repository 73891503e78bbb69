/** The Redis StateStore: each method checks the store is open and maps driver errors to `[redis]` ones. */
import { closedError } from '../../core/errors.js';
import type { StateStore, StoreCapabilities } from '../types.js';
import { listActions } from './action-list.js';
import { actionStats } from './action-stats.js';
import * as actions from './actions.js';
import * as checkpoints from './checkpoints.js';
import * as claims from './claims.js';
import { ADAPTER, mapError } from './client.js';
import * as memory from './memory.js';
import * as messages from './messages.js';
import type { Ctx } from './plan.js';
import { sweepRetention } from './retention.js';
import { listSessions } from './session-list.js';
import * as sessions from './sessions.js';
import { sessionStats } from './stats.js';
import { sweepExpired } from './sweep.js';
import * as tasks from './tasks.js';
import { commitTurn } from './turns.js';

type Rest<F> = F extends (ctx: Ctx, ...args: infer A) => unknown ? A : never;
type Result<F> = F extends (...args: never[]) => infer R ? Awaited<R> : never;

export class RedisStore implements StateStore {
  readonly adapter = ADAPTER;
  readonly capabilities: StoreCapabilities = { multiProcess: true, durable: true };
  private closed = false;

  constructor(private readonly ctx: Ctx) {}

  /** Binds a module function to this store: open check, then errors mapped to AgentStateError. */
  private op<F extends (ctx: Ctx, ...args: never[]) => unknown>(
    fn: F,
  ): (...args: Rest<F>) => Promise<Result<F>> {
    return async (...args: Rest<F>) => {
      if (this.closed) throw closedError(ADAPTER);
      try {
        return (await (fn as (ctx: Ctx, ...rest: Rest<F>) => unknown)(this.ctx, ...args)) as Result<F>;
      } catch (error) {
        throw mapError(error);
      }
    };
  }

  readonly createSession = this.op(sessions.createSession);
  readonly getSession = this.op(sessions.getSession);
  readonly listSessions = this.op(listSessions);
  readonly updateSession = this.op(sessions.updateSession);
  readonly touchSession = this.op(sessions.touchSession);
  readonly endSession = this.op(sessions.endSession);
  readonly deleteSession = this.op(sessions.deleteSession);

  readonly appendMessages = this.op(messages.appendMessages);
  readonly listMessages = this.op(messages.listMessages);
  readonly lastMessages = this.op(messages.lastMessages);
  readonly getSessionHead = this.op(messages.getSessionHead);

  readonly createTask = this.op(tasks.createTask);
  readonly getTask = this.op(tasks.getTask);
  readonly listTasks = this.op(tasks.listTasks);
  readonly updateTask = this.op(tasks.updateTask);
  readonly listTaskEvents = this.op(tasks.listTaskEvents);

  readonly beginAction = this.op(actions.beginAction);
  readonly getAction = this.op(actions.getAction);
  readonly getActionByKey = this.op(actions.getActionByKey);
  readonly completeAction = this.op(actions.completeAction);
  readonly markActionUnknown = this.op(actions.markActionUnknown);
  readonly resolveAction = this.op(actions.resolveAction);
  readonly recordAttempt = this.op(actions.recordAttempt);
  readonly listActions = this.op(listActions);

  readonly putCheckpoint = this.op(checkpoints.putCheckpoint);
  readonly getCheckpoint = this.op(checkpoints.getCheckpoint);
  readonly latestCheckpoint = this.op(checkpoints.latestCheckpoint);
  readonly listCheckpoints = this.op(checkpoints.listCheckpoints);
  readonly pruneCheckpoints = this.op(checkpoints.pruneCheckpoints);

  readonly putMemory = this.op(memory.putMemory);
  readonly getMemory = this.op(memory.getMemory);
  readonly deleteMemory = this.op(memory.deleteMemory);
  readonly listMemory = this.op(memory.listMemory);

  readonly commitTurn = this.op(commitTurn);

  readonly acquireLease = this.op(claims.acquireLease);
  readonly releaseLease = this.op(claims.releaseLease);
  readonly claimRequestKey = this.op(claims.claimRequestKey);
  readonly completeRequestKey = this.op(claims.completeRequestKey);
  readonly releaseRequestKey = this.op(claims.releaseRequestKey);

  readonly sweepExpired = this.op(sweepExpired);
  readonly sessionStats = this.op(sessionStats);
  readonly actionStats = this.op(actionStats);
  readonly sweepRetention = this.op(sweepRetention);

  async ping(): Promise<boolean> {
    if (this.closed) throw closedError(ADAPTER);
    try {
      return (await this.ctx.redis.ping()) === 'PONG';
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    try {
      await this.ctx.redis.quit();
    } catch {
      this.ctx.redis.disconnect();
    }
  }
}
