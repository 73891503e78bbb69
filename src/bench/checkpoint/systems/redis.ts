/**
 * Redis systems (opt-in: they need a server). Raw: one SET of the state JSON per checkpoint plus a SET of
 * the run's latest step, in one MULTI; reads are GET and MGET. Keys carry a prefix of this bench run and
 * are deleted at close.
 */
import { Redis } from 'ioredis';
import { openStore } from '../../../store/open.js';
import type { ReadBack, SystemSpec } from '../system.js';
import { readBack } from '../system.js';
import { agentstateDriver } from './agentstate.js';

export const rawRedis: SystemSpec = {
  name: 'raw-redis',
  family: 'raw',
  backend: 'redis',
  optIn: true,
  async open(context) {
    const redis = new Redis(context.redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
    await redis.connect();
    const prefix = `agentstate-bench:${context.tag}`;
    const key = (run: number, step: number | 'latest') => `${prefix}:${run}:${step}`;
    const written = new Set<string>();
    const decode = (step: number, data: string | null): ReadBack => {
      if (data === null) throw new Error('raw-redis: no checkpoint found');
      return readBack(step, (JSON.parse(data) as { messages?: unknown }).messages);
    };
    const latestStep = async (run: number) => {
      const step = await redis.get(key(run, 'latest'));
      if (step === null) throw new Error('raw-redis: no checkpoint found');
      return Number(step);
    };
    let closed = false;
    return {
      async put(run, step, state) {
        written.add(key(run, step)).add(key(run, 'latest'));
        await redis
          .multi()
          .set(key(run, step), JSON.stringify(state))
          .set(key(run, 'latest'), String(step))
          .exec();
      },
      async latest(run) {
        const step = await latestStep(run);
        return decode(step, await redis.get(key(run, step)));
      },
      async history(run, limit) {
        const top = await latestStep(run);
        const steps = Array.from({ length: Math.min(limit, top + 1) }, (_, i) => top - i);
        const values = await redis.mget(...steps.map((step) => key(run, step)));
        return values.map((data, i) => decode(steps[i] as number, data));
      },
      async storedBytes() {
        let bytes = 0;
        for (const k of written) bytes += (await redis.memory('USAGE', k)) ?? 0;
        return { method: 'MEMORY USAGE of its keys', bytes };
      },
      async close() {
        if (closed) return;
        closed = true;
        const keys = [...written];
        for (let i = 0; i < keys.length; i += 500) await redis.del(...keys.slice(i, i + 500));
        redis.disconnect();
      },
    };
  },
};

/** agentstate's Redis store, through openStore, once the adapter is there. */
export const agentstateRedis: SystemSpec = {
  name: 'agentstate-redis',
  family: 'agentstate',
  backend: 'redis',
  optIn: true,
  async open(context) {
    const store = await openStore(context.redisUrl);
    const match = `*{bench-${context.tag}*`; // every key of the bench's tenant: its name is in the hash tag
    const tenantKeys = async (each: (redis: Redis, keys: string[]) => Promise<void>) => {
      const redis = new Redis(context.redisUrl, { maxRetriesPerRequest: 1 });
      try {
        for await (const keys of redis.scanStream({ match, count: 500 })) await each(redis, keys as string[]);
      } finally {
        redis.disconnect();
      }
    };
    const system = agentstateDriver(
      store,
      context.tag,
      async () => {
        let bytes = 0;
        await tenantKeys(async (redis, keys) => {
          for (const key of keys) bytes += (await redis.memory('USAGE', key)) ?? 0;
        });
        return { method: 'MEMORY USAGE of the keys of its tenant', bytes };
      },
      true,
    );
    return {
      ...system,
      async close() {
        await system.close();
        // Pruning leaves the run's bookkeeping (sequence, owner); the bench's tenant is its own, so drop it all.
        await tenantKeys(async (redis, keys) => {
          if (keys.length > 0) await redis.del(...keys);
        });
      },
    };
  },
};
