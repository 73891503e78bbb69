/**
 * node --import tsx test/store/redis-child/measure-memory.ts [url] [sessions]
 *
 * Measures Redis memory per idle session: used_memory before and after creating N sessions (default 1000)
 * with 5 short messages each, and the sum of MEMORY USAGE over the keys written (which other clients of a
 * shared server cannot disturb). Removes its keys afterwards. Prints JSON.
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { openRedisStore } from '../../../src/store/redis/index.js';
import { keysOf } from '../redis-env.js';

const url = process.argv[2] ?? process.env.AGENTSTATE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const count = Number(process.argv[3] ?? 1000);
const prefix = `measure_${randomUUID().slice(0, 8)}`;
const redis = new Redis(url);

async function usedMemory(): Promise<number> {
  const info = await redis.info('memory');
  return Number(/used_memory:(\d+)/.exec(info)?.[1]);
}

const lines = [
  'I need a flight from Paris to Tokyo on the 3rd of May',
  'Sure. Which cabin would you like: economy, premium or business?',
  'Economy, window seat if possible',
  'Booked AF276 on May 3, economy, seat 34A. Anything else?',
  'No thanks, that is all',
];
const store = await openRedisStore(url, { prefix });
const before = await usedMemory();
const tenant_id = `t_${randomUUID()}`;
for (let i = 0; i < count; i += 50) {
  await Promise.all(
    Array.from({ length: Math.min(50, count - i) }, async (_, j) => {
      const scope = { tenant_id, user_id: `u_${i + j}` };
      const session = await store.createSession(scope, { agent: 'flight_booking', context: { lang: 'en' } });
      await store.appendMessages(
        scope,
        session.id,
        lines.map((content, n) => ({
          role: n % 2 === 0 ? ('user' as const) : ('assistant' as const),
          content,
        })),
      );
    }),
  );
}
const after = await usedMemory();
const keys = await keysOf(redis, prefix);
let usage = 0;
for (const key of keys) usage += Number(await redis.memory('USAGE', key));
await store.close();
for (let i = 0; i < keys.length; i += 500) await redis.unlink(...keys.slice(i, i + 500));
redis.disconnect();
process.stdout.write(
  `${JSON.stringify({
    sessions: count,
    keys: keys.length,
    used_memory_delta_per_session: Math.round((after - before) / count),
    memory_usage_per_session: Math.round(usage / count),
  })}\n`,
);
