/**
 * The Redis driver: rows in the key layout of keys.ts, under the store core. A transaction is a plan
 * (plan.ts): its reads are recorded with their revisions, its writes sent in one script that first checks
 * them, and the whole transaction runs again when one changed. Index lists are read from Redis, so they
 * do not see the plan's own writes (`listsAfterCommit`).
 */
import type { SessionStatus } from '../../core/model.js';
import type { DriverReads, DriverTx, StoreDriver } from '../core/driver.js';
import type { CheckedRetention } from '../shared/retention.js';
import { cursorKeyFromHex, newCursorKey } from '../shared/sealed-cursor.js';
import type { ActionStats, RetentionSweep, StoreCapabilities } from '../types.js';
import { actionStats } from './action-stats.js';
import { ADAPTER, replyError } from './client.js';
import { cursorKeyKey } from './keys.js';
import { type Ctx, type Plan, runPlan } from './plan.js';
import { sweepRetention } from './retention.js';
import { RunEventRows } from './run-events.js';
import { sessionStats } from './stats.js';
import { sweepExpired } from './sweep.js';

/**
 * The rows of one call: over `plan` inside a transaction, straight from Redis outside one (null). The
 * domains' rows are one class chain (sessions, tasks, actions, checkpoints, then memory, leases and request
 * keys, then run events): one object per call, nothing copied.
 */
class RedisTx extends RunEventRows implements DriverTx {}

export function redisRows(ctx: Ctx, plan: Plan | null): DriverTx {
  return new RedisTx(ctx, plan);
}

async function guarded<T>(work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (error) {
    throw replyError(error);
  }
}

export class RedisDriver implements StoreDriver {
  readonly name = ADAPTER;
  /** A plan's script runs in the user's cluster slot. */
  readonly capabilities: StoreCapabilities = {
    multiProcess: true,
    durable: true,
    oneUserPerTransaction: true,
  };
  readonly listsAfterCommit = true;

  constructor(readonly ctx: Ctx) {}

  transaction<T>(work: (tx: DriverTx) => Promise<T>): Promise<T> {
    return guarded(runPlan(this.ctx, (plan) => work(redisRows(this.ctx, plan))));
  }
  read<T>(work: (tx: DriverReads) => Promise<T>): Promise<T> {
    return guarded(work(redisRows(this.ctx, null)));
  }

  /** One key for every store on this Redis: set once (SET NX), read back by every other. */
  async cursorKey(): Promise<Buffer> {
    const mine = newCursorKey().toString('hex');
    const held = await guarded(this.ctx.redis.set(cursorKeyKey(this.ctx.prefix), mine, 'NX', 'GET'));
    return cursorKeyFromHex(held ?? mine);
  }

  sweepExpired(now_ms: number, limit: number): Promise<number> {
    return guarded(sweepExpired(this.ctx, now_ms, limit));
  }
  sessionStats(now_ms: number): Promise<Record<SessionStatus, number>> {
    return guarded(sessionStats(this.ctx, now_ms));
  }
  actionStats(): Promise<ActionStats> {
    return guarded(actionStats(this.ctx));
  }
  sweepRetention(retention: CheckedRetention): Promise<RetentionSweep> {
    return guarded(sweepRetention(this.ctx, retention));
  }

  async ping(): Promise<boolean> {
    try {
      return (await this.ctx.redis.ping()) === 'PONG';
    } catch {
      return false;
    }
  }
  async close(): Promise<void> {
    try {
      await this.ctx.redis.quit();
    } catch {
      this.ctx.redis.disconnect();
    }
  }
}
