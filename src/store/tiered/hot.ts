/**
 * Hot copies of open tasks in Redis, under the user's hash tag: `P:{t:u}:ht:<task id>` (see HOT_LUA for
 * the fields). PostgreSQL is the truth; the copy only saves a round trip to it on `getTask`.
 *
 * How a copy never shows a reader a stale task:
 * - before every durable task write, `hold` drops the copy (a tombstone that remembers the version), so
 *   readers go to PostgreSQL while the write is in flight, and after a crash that skipped the write-through;
 * - after the durable commit, `put` writes the new version through (only a newer version ever replaces a
 *   copy); a closed task leaves a tombstone (only open tasks are kept hot);
 * - a read that missed fills the copy with what PostgreSQL gave, under the same newer-only rule;
 * - version checks are always PostgreSQL's, so a failed write (a conflict included) leaves the copy
 *   dropped by its `hold` until the next successful write.
 * A hold failing (Redis down) fails the write before PostgreSQL is touched; a put or fill failing is
 * ignored (the tombstone left by the hold keeps readers on PostgreSQL); a hot read failing falls back to
 * PostgreSQL. Copies expire after `ttlMs` (default 1 hour) without writes.
 */
import type { Redis } from 'ioredis';
import { FINAL_TASK_STATES, type Task } from '../../core/model.js';
import { UserKeys } from '../redis/keys.js';
import type { TieredScripts } from './scripts.js';

export const DEFAULT_HOT_TTL_SECONDS = 3600;

export class HotTasks {
  constructor(
    private readonly redis: Redis,
    private readonly scripts: TieredScripts,
    private readonly prefix: string,
    private readonly ttlMs: number,
  ) {}

  key(tenantId: string, userId: string, taskId: string): string {
    return `${new UserKeys(this.prefix, tenantId, userId).base}ht:${taskId}`;
  }

  /** The hot copy, or undefined on a miss (no copy, a tombstone, or Redis not answering). */
  async read(tenantId: string, userId: string, taskId: string): Promise<Task | undefined> {
    try {
      const json = await this.redis.hget(this.key(tenantId, userId, taskId), 'd');
      return json === null ? undefined : (JSON.parse(json) as Task);
    } catch {
      return undefined;
    }
  }

  /** Drops the copies of tasks about to be written (durable write pending at `version`). Throws on failure. */
  async hold(tenantId: string, userId: string, tasks: readonly { id: string; version: number }[]) {
    await Promise.all(
      tasks.map((t) => this.scripts.hot(this.key(tenantId, userId, t.id), 'hold', t.version, '', this.ttlMs)),
    );
  }

  /** Writes tasks PostgreSQL returned (after a commit or a read); best effort. */
  async put(tasks: readonly Task[]): Promise<void> {
    await Promise.all(
      tasks.map(async (task) => {
        const json = FINAL_TASK_STATES.includes(task.state) ? '' : JSON.stringify(task);
        const key = this.key(task.tenant_id, task.user_id, task.id);
        try {
          await this.scripts.hot(key, 'put', task.version, json, this.ttlMs);
        } catch {
          // The hold before the durable write left a tombstone: readers use PostgreSQL.
        }
      }),
    );
  }
}
