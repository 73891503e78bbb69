/**
 * Session turn locks: `P:{t}:tl:<session id>` = owner token, with a TTL. Every call of the tiered store
 * that changes a session's version (updateSession, endSession, commitTurn with a session patch) or that
 * must not race the Redis half of a turn (deleteSession, appendMessages, commitTurn with messages or run
 * events) holds the lock of that session from before its Redis checks until after its Redis write. So the
 * session version a turn checked before committing PostgreSQL is still the version when it writes Redis
 * after the commit, and the seqs its messages get are those its run events told in that commit (turn.ts).
 * Touching needs no lock: it changes neither the version nor the messages.
 *
 * A holder that dies keeps the lock until its TTL (`lockMs`, default 10 s) runs out; waiters retry with a
 * short random back-off and give up with `conflict` after twice the TTL.
 */
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { AgentStateError } from '../../core/errors.js';
import { TenantKeys } from '../redis/keys.js';
import type { TieredScripts } from './scripts.js';

export const DEFAULT_LOCK_MS = 10_000;

export class SessionLocks {
  constructor(
    private readonly redis: Redis,
    private readonly scripts: TieredScripts,
    private readonly prefix: string,
    readonly lockMs: number,
  ) {}

  key(tenantId: string, sessionId: string): string {
    return `${new TenantKeys(this.prefix, tenantId).base}tl:${sessionId}`;
  }

  /** Takes the locks of `sessionIds` (in sorted order, so two holders never wait on each other). */
  async acquire(tenantId: string, sessionIds: readonly string[]): Promise<() => Promise<void>> {
    const ids = [...new Set(sessionIds)].sort();
    const token = randomUUID();
    const held: string[] = [];
    const release = async () => {
      await Promise.all(held.map((key) => this.scripts.unlock(key, token).catch(() => undefined)));
    };
    try {
      for (const id of ids) {
        const key = this.key(tenantId, id);
        await this.take(key, token, id);
        held.push(key);
      }
    } catch (error) {
      await release();
      throw error;
    }
    return release;
  }

  private async take(key: string, token: string, sessionId: string): Promise<void> {
    const deadline = Date.now() + 2 * this.lockMs;
    for (let attempt = 0; ; attempt++) {
      if ((await this.redis.set(key, token, 'PX', this.lockMs, 'NX')) === 'OK') return;
      if (Date.now() > deadline) {
        throw new AgentStateError(
          'conflict',
          `[tiered] session ${sessionId} is busy (its turn lock is held)`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 1 + Math.random() * Math.min(2 + attempt, 20)));
    }
  }

  /** Runs `work` holding the locks of `sessionIds`. */
  async with<T>(tenantId: string, sessionIds: readonly string[], work: () => Promise<T>): Promise<T> {
    const release = await this.acquire(tenantId, sessionIds);
    try {
      return await work();
    } finally {
      await release();
    }
  }
}
