/**
 * The stores a benchmark runs on, each fresh and removed afterwards: sqlite (a file in a temp folder),
 * postgres (a new schema in AGENTSTATE_BENCH_POSTGRES_URL, default postgres://postgres@127.0.0.1:5432/test),
 * redis (a new key prefix in AGENTSTATE_BENCH_REDIS_URL, default redis://127.0.0.1:6379) and memory.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import pg from 'pg';
import { openStore as openThisBuildsStore } from '../store/open.js';
import type { StateStore } from '../store/types.js';

export interface BenchStore {
  readonly store: StateStore;
  /** Closes the store and removes what it wrote. */
  readonly done: () => Promise<void>;
}

export const BENCH_STORE_NAMES = ['sqlite', 'postgres', 'redis', 'memory'] as const;

/** How a store is opened by URL: this build's `openStore`, or another build's (bench:turn --before). */
export type StoreOpener = (url: string) => Promise<StateStore>;

export async function openBenchStore(
  name: string,
  tag: string,
  openStore: StoreOpener = openThisBuildsStore,
): Promise<BenchStore> {
  const suffix = randomBytes(4).toString('hex');
  if (name === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), `agentstate-${tag}-`));
    const store = await openStore(`sqlite:${join(dir, 'bench.db')}`);
    return {
      store,
      done: async () => {
        await store.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  if (name === 'postgres') {
    const base = process.env.AGENTSTATE_BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
    const schema = `bench_${tag}_${suffix}`;
    const url = new URL(base);
    url.searchParams.set('schema', schema);
    const store = await openStore(url.toString());
    return {
      store,
      done: async () => {
        await store.close();
        const client = new pg.Client({ connectionString: base });
        await client.connect();
        await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
        await client.end();
      },
    };
  }
  if (name === 'redis') {
    const base = process.env.AGENTSTATE_BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
    const prefix = `bench-${tag}-${suffix}`;
    const url = new URL(base);
    url.searchParams.set('prefix', prefix);
    const store = await openStore(url.toString());
    return {
      store,
      done: async () => {
        await store.close();
        const redis = new Redis(base);
        let cursor = '0';
        do {
          const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
          if (keys.length > 0) await redis.unlink(...keys);
          cursor = next;
        } while (cursor !== '0');
        await redis.quit();
      },
    };
  }
  if (name === 'memory') {
    const store = await openStore('memory:');
    return { store, done: () => store.close() };
  }
  throw new Error(`unknown store ${name}: use ${BENCH_STORE_NAMES.join(', ')}`);
}
