/**
 * node --import tsx test/store/redis-child/measure-retention.ts [url] [tasks] [users] [cutoffs]
 *
 * Measures sweepRetention on the Redis store: writes `tasks` old tasks (default 10 000) spread over `users`
 * users of one tenant (default 100), each task with one finished action and two checkpoints of its own run,
 * then calls sweepRetention(cutoffs, 500) until a call deletes nothing, timing the calls. `cutoffs` is
 * `tasks` (tasks_before only: each task takes its action and checkpoints along) or `all` (every cutoff, as
 * the sweeper passes them). Removes its keys afterwards. Prints JSON.
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { ManualClock } from '../../../src/core/clock.js';
import { openRedisStore } from '../../../src/store/redis/index.js';
import type { RetentionCutoffs, Scope } from '../../../src/store/types.js';
import { keysOf } from '../redis-env.js';

const url = process.argv[2] ?? process.env.AGENTSTATE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const taskCount = Number(process.argv[3] ?? 10_000);
const userCount = Number(process.argv[4] ?? 100);
const which = process.argv[5] ?? 'tasks';
const LIMIT = 500;
const prefix = `measure_${randomUUID().slice(0, 8)}`;
const clock = new ManualClock(Date.now() - 60 * 24 * 3600 * 1000);
const store = await openRedisStore(url, { prefix, clock });
const redis = new Redis(url);

async function writeTask(s: Scope, i: number): Promise<void> {
  const task = await store.createTask(s, { type: 'flight_booking', slots: { to: 'SHA' } });
  const { action } = await store.beginAction(s, {
    task_id: task.id,
    type: 'tool_call',
    tool: 'book',
    params: { flight: `AF${i}` },
    idempotency_key: `book-${i}`,
  });
  await store.completeAction(s, action.id, { status: 'SUCCESS', result: { pnr: `P${i}` } });
  const run = `run-${task.id}`;
  const messages = [{ role: 'user', content: 'Book me a flight to Shanghai' }];
  await store.putCheckpoint(s, { run_id: run, task_id: task.id, step: 0, channels: { messages } });
  messages.push({ role: 'assistant', content: `Booked AF${i}` });
  await store.putCheckpoint(s, { run_id: run, task_id: task.id, step: 1, channels: { messages } });
}

async function fill(): Promise<void> {
  const tenant_id = `t_${randomUUID()}`;
  const perUser = Math.ceil(taskCount / userCount);
  await Promise.all(
    Array.from({ length: userCount }, async (_, u) => {
      const s = { tenant_id, user_id: `u_${u}` };
      for (let i = u * perUser; i < Math.min(taskCount, (u + 1) * perUser); i++) await writeTask(s, i);
    }),
  );
}

try {
  const writeStart = performance.now();
  await fill();
  const writeMs = performance.now() - writeStart;
  clock.advance(24 * 3600 * 1000);
  const before = new Date(clock.now()).toISOString();
  const cutoffs: RetentionCutoffs =
    which === 'all'
      ? { tasks_before: before, actions_before: before, checkpoints_before: before }
      : { tasks_before: before };
  const keysBefore = (await keysOf(redis, prefix)).length;
  const calls: number[] = [];
  const total = { tasks: 0, actions: 0, checkpoints: 0 };
  const start = performance.now();
  for (;;) {
    const callStart = performance.now();
    const swept = await store.sweepRetention(cutoffs, LIMIT);
    calls.push(performance.now() - callStart);
    total.tasks += swept.tasks;
    total.actions += swept.actions;
    total.checkpoints += swept.checkpoints;
    if (swept.tasks + swept.actions + swept.checkpoints === 0) break;
  }
  const sweepMs = performance.now() - start;
  const sorted = [...calls].sort((a, b) => a - b);
  console.log(
    JSON.stringify({
      tasks: taskCount,
      users: userCount,
      cutoffs: which,
      limit: LIMIT,
      write_ms: Math.round(writeMs),
      keys_before: keysBefore,
      keys_after: (await keysOf(redis, prefix)).length,
      deleted: total,
      calls: calls.length,
      sweep_ms: Math.round(sweepMs),
      call_ms_median: Math.round(sorted[Math.floor(sorted.length / 2)] ?? 0),
      call_ms_max: Math.round(sorted[sorted.length - 1] ?? 0),
    }),
  );
} finally {
  await store.close();
  const keys = await keysOf(redis, prefix);
  for (let i = 0; i < keys.length; i += 500) await redis.unlink(...keys.slice(i, i + 500));
  redis.disconnect();
}
