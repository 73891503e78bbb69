/**
 * The stores' checkpoint blob cache: a read fetches only the blobs the store does not hold. A run's
 * latest checkpoint after this store's own puts is read with its row alone; a store that did not write it
 * reads the blobs once, then holds them, and a checkpoint read alone leaves its whole values kept (handed
 * out as copies); a cache smaller than a run's append chain, or none at all, still reads every checkpoint
 * back exactly (the checkpoint concerns of the conformance suite run on both).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import type { JsonObject } from '../../src/core/json.js';
import { openPostgresStore } from '../../src/store/postgres/index.js';
import { openRedisStore } from '../../src/store/redis/index.js';
import { BlobCache } from '../../src/store/shared/blob-cache.js';
import type { BlobRow } from '../../src/store/shared/checkpoint-codec.js';
import { statementsSent } from '../../src/store/sql/executor.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import type { StateStore } from '../../src/store/types.js';
import { checkpointHistoryTests } from '../../src/testing/conformance/checkpoint-history.js';
import { checkpointTests } from '../../src/testing/conformance/checkpoints.js';
import { useStore } from '../../src/testing/conformance/context.js';
import { countingPool, freshSchemas, schemaUrl } from './postgres-env.js';
import { REDIS_URL, randomPrefix, removePrefix } from './redis-env.js';

const dir = mkdtempSync(join(tmpdir(), 'agentstate-blob-cache-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const freshSchema = freshSchemas();
const redisPrefix = randomPrefix();
afterAll(() => removePrefix(redisPrefix));

const blob = (hash: string, base: string | null, data: string): BlobRow => ({ hash, base, data });

describe('BlobCache', () => {
  it('follows a chain through its bases and names where it leaves the cache', () => {
    const cache = new BlobCache(1000);
    cache.add('run', [blob('a1', null, '[1]'), blob('a2', 'a1', '[2]'), blob('a4', 'a3', '[4]')]);
    const into = new Map<string, BlobRow>();
    expect(cache.collect('run', ['a2'], into)).toEqual([]);
    expect([...into.keys()]).toEqual(['a2', 'a1']);
    const more = new Map<string, BlobRow>();
    expect(cache.collect('run', ['a4', 'zz'], more)).toEqual(['a3', 'zz']);
    expect([...more.keys()]).toEqual(['a4']);
    // Another run's blobs are not this run's, whatever their hash.
    expect(cache.collect('other', ['a1'], new Map())).toEqual(['a1']);
  });

  it('drops the least recently used past its bound, and keeps no blob larger than the bound', () => {
    const cache = new BlobCache(10);
    cache.add('run', [blob('x', null, '1234'), blob('y', null, '5678')]);
    cache.collect('run', ['x'], new Map()); // x is now the most recently used
    cache.add('run', [blob('z', null, 'abcd')]);
    expect(cache.size).toBe(8);
    expect(cache.collect('run', ['x', 'y', 'z'], new Map())).toEqual(['y']);
    cache.add('run', [blob('big', null, 'a'.repeat(11))]);
    expect(cache.collect('run', ['big'], new Map())).toEqual(['big']);
    expect(new BlobCache(0).collect('run', ['x'], new Map())).toEqual(['x']);
  });

  it('evicts in least recently used order through many rounds of adds, touches and evictions', () => {
    // A reference LRU of the same bound (10 entries of 1 character), checked after every step.
    const cache = new BlobCache(10);
    const order: string[] = [];
    const use = (hash: string) => {
      const at = order.indexOf(hash);
      if (at >= 0) order.splice(at, 1);
      order.push(hash);
      if (order.length > 10) order.shift();
    };
    let seed = 7;
    const next = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed;
    };
    for (let step = 0; step < 2000; step++) {
      if (next() % 3 === 0 && order.length > 0) {
        const hash = order[next() % order.length] as string;
        expect(cache.collect('run', [hash], new Map())).toEqual([]);
        use(hash);
      } else {
        const hash = `h${step}`;
        cache.add('run', [blob(hash, null, 'x')]);
        use(hash);
      }
      expect(cache.size).toBe(order.length);
    }
    const held = Array.from({ length: 2000 }, (_, i) => `h${i}`);
    const missing = new Set(cache.collect('run', held, new Map()));
    expect(held.filter((hash) => !missing.has(hash)).sort()).toEqual([...order].sort());
  });

  it('keeps the whole value of a checkpoint read alone from its second reading, and hands out copies of it', () => {
    const cache = new BlobCache(1000);
    cache.add('run', [blob('w', null, '[{"a":1}]'), blob('x', 'w', '[{"b":2}]')]);
    const manifest = { list: { h: 'x', n: 2, d: 1 } };
    const read = () => {
      const blobs = new Map<string, BlobRow>();
      const wholes = new Map();
      expect(cache.collect('run', ['x'], blobs, wholes)).toEqual([]);
      return { wholes, channels: cache.decodeOne('run', manifest, blobs, wholes) };
    };
    // Read once: built from the chain and handed out as built; the cache holds the blobs alone (18).
    const first = read();
    expect(first.wholes.size).toBe(0);
    expect(first.channels).toEqual({ list: [{ a: 1 }, { b: 2 }] });
    expect(cache.size).toBe(18);
    (first.channels.list as JsonObject[])[0]!.a = 'changed';
    // Read again: built again and kept (18 more), not the value of w below it on its chain.
    const second = read();
    expect(second.channels).toEqual({ list: [{ a: 1 }, { b: 2 }] });
    expect(cache.size).toBe(18 + 18);
    (second.channels.list as JsonObject[])[1]!.b = 'changed';
    // The whole value is kept: its chain is not needed, and what callers changed changed nothing here.
    const third = read();
    expect([...third.wholes.keys()]).toEqual(['x']);
    expect(third.channels).toEqual({ list: [{ a: 1 }, { b: 2 }] });
    expect(third.channels.list).not.toBe(second.channels.list);
    // What is handed out from the kept value is a copy too.
    (third.channels.list as JsonObject[])[0]!.a = 'changed';
    (third.channels.list as JsonObject[]).pop();
    expect(read().channels).toEqual({ list: [{ a: 1 }, { b: 2 }] });
  });

  it('builds on a kept value without changing it, and gives two channels of one value two copies', () => {
    const cache = new BlobCache(1000);
    cache.add('run', [blob('w', null, '[{"a":1}]'), blob('x', 'w', '[{"b":2}]')]);
    const decode = (manifest: Record<string, { h: string; n: number; d: number }>) => {
      const blobs = new Map<string, BlobRow>();
      const wholes = new Map();
      cache.collect(
        'run',
        Object.values(manifest).map((ref) => ref.h),
        blobs,
        wholes,
      );
      return cache.decodeOne('run', manifest, blobs, wholes);
    };
    // Two channels naming x: the first is handed out as built, the second (x's second decoding) is kept
    // and copied, so they are two values.
    const both = decode({ one: { h: 'x', n: 2, d: 1 }, two: { h: 'x', n: 2, d: 1 } });
    expect(both).toEqual({ one: [{ a: 1 }, { b: 2 }], two: [{ a: 1 }, { b: 2 }] });
    expect(both.one).not.toBe(both.two);
    (both.one as JsonObject[])[0]!.a = 'one';
    expect(both.two).toEqual([{ a: 1 }, { b: 2 }]);
    // y appends to x, whose whole value is kept: y is built on it, and handed out as a copy of its items.
    cache.add('run', [blob('y', 'x', '[{"c":3}]')]);
    const y = decode({ list: { h: 'y', n: 3, d: 2 } });
    expect(y).toEqual({ list: [{ a: 1 }, { b: 2 }, { c: 3 }] });
    (y.list as JsonObject[])[0]!.a = 'y';
    (y.list as JsonObject[]).push({ d: 4 });
    expect(decode({ list: { h: 'x', n: 2, d: 1 } })).toEqual({ list: [{ a: 1 }, { b: 2 }] });
    expect(decode({ list: { h: 'y', n: 3, d: 2 } })).toEqual({ list: [{ a: 1 }, { b: 2 }, { c: 3 }] });
  });
});

/** Step i of a run: a list growing by one element, longer than the chain-depth cap, and a counter. */
function step(i: number): JsonObject {
  return { messages: Array.from({ length: i + 1 }, (_, k) => ({ k, text: `message ${k}` })), counter: i };
}

async function writeRun(store: StateStore, run: string, steps: number): Promise<void> {
  const scope = { tenant_id: 'tenant', user_id: 'user' };
  for (let i = 0; i < steps; i++)
    await store.putCheckpoint(scope, { run_id: run, step: i, channels: step(i) });
}

/** The statements a latest-checkpoint read sends, and what it reads. */
async function latestRead(store: StateStore, run: string, sent: () => number) {
  const before = sent();
  const checkpoint = await store.latestCheckpoint({ tenant_id: 'tenant', user_id: 'user' }, run);
  return { statements: sent() - before, channels: checkpoint?.channels };
}

describe('SQLite: reads fetch only the blobs the store does not hold', () => {
  const sent = () => statementsSent.sqlite;

  it("reads a run's latest checkpoint after its own puts with the row alone; another store once with its blobs", async () => {
    const file = join(dir, 'latest.db');
    const writer = await openSqliteStore(file);
    const reader = await openSqliteStore(file);
    await writeRun(writer, 'run-a', 24);
    expect(await latestRead(writer, 'run-a', sent)).toEqual({ statements: 1, channels: step(23) });
    expect(await latestRead(reader, 'run-a', sent)).toEqual({ statements: 2, channels: step(23) });
    expect(await latestRead(reader, 'run-a', sent)).toEqual({ statements: 1, channels: step(23) });
    // The writer's next put is read by the reader with only the new blobs fetched; values are fresh copies.
    await writer.putCheckpoint(
      { tenant_id: 'tenant', user_id: 'user' },
      { run_id: 'run-a', step: 24, channels: step(24) },
    );
    const next = await latestRead(reader, 'run-a', sent);
    expect(next).toEqual({ statements: 2, channels: step(24) });
    (next.channels?.messages as JsonObject[] | undefined)?.push({ k: -1 });
    expect(await latestRead(reader, 'run-a', sent)).toEqual({ statements: 1, channels: step(24) });
    await writer.close();
    await reader.close();
  });

  it('fails a read of a damaged chain (bases leading back to its top) instead of walking it forever', async () => {
    const file = join(dir, 'damaged.db');
    const writer = await openSqliteStore(file);
    await writeRun(writer, 'run-d', 5);
    await writer.close();
    const db = new Database(file);
    const tops = db
      .prepare("SELECT hash FROM checkpoint_blobs WHERE run_id = 'run-d' AND base IS NOT NULL")
      .all() as { hash: string }[];
    const top = tops.at(-1)?.hash;
    expect(top).toBeDefined();
    // The whole value the chain ends in now names the chain's top as its base: a cycle.
    expect(
      db
        .prepare(
          "UPDATE checkpoint_blobs SET base = ? WHERE run_id = 'run-d' AND base IS NULL AND hash LIKE 'a%'",
        )
        .run(top).changes,
    ).toBe(1);
    db.close();
    const reader = await openSqliteStore(file);
    const scope = { tenant_id: 'tenant', user_id: 'user' };
    await expect(reader.latestCheckpoint(scope, 'run-d')).rejects.toThrow(/does not end within 64 links/);
    await expect(reader.listCheckpoints(scope, 'run-d')).rejects.toThrow();
    await reader.close();
  });

  it('with checkpointCacheChars 0 every read fetches its blobs', async () => {
    const store = await openSqliteStore(join(dir, 'none.db'), { checkpointCacheChars: 0 });
    await writeRun(store, 'run-b', 3);
    expect(await latestRead(store, 'run-b', sent)).toEqual({ statements: 2, channels: step(2) });
    await store.close();
  });

  it('refuses a checkpointCacheChars that is not a whole number of at least 0, and opens nothing', async () => {
    const file = join(dir, 'refused.db');
    for (const bad of [-1, 1.5, '8']) {
      await expect(openSqliteStore(file, { checkpointCacheChars: bad as number })).rejects.toThrow(
        /checkpointCacheChars/,
      );
    }
  });
});

describe('PostgreSQL: reads fetch only the blobs the store does not hold', () => {
  it("reads a run's latest checkpoint after its own puts in one round trip; another store once in two", async () => {
    const schema = freshSchema();
    const { pool, counter } = countingPool(1);
    const writer = await openPostgresStore({ pool, schema });
    const { pool: readerPool, counter: readerCounter } = countingPool(1);
    const countedReader = await openPostgresStore({ pool: readerPool, schema });
    await writeRun(writer, 'run-c', 20);
    expect(await latestRead(writer, 'run-c', () => counter.statements)).toEqual({
      statements: 1,
      channels: step(19),
    });
    const sent = () => readerCounter.statements;
    expect(await latestRead(countedReader, 'run-c', sent)).toEqual({ statements: 2, channels: step(19) });
    expect(await latestRead(countedReader, 'run-c', sent)).toEqual({ statements: 1, channels: step(19) });
    for (const store of [writer, countedReader]) await store.close();
    await pool.end();
    await readerPool.end();
  });
});

describe('Redis: reads are not sent the blobs the store holds', () => {
  it("reads what another store wrote, and each next checkpoint, exactly; copies handed out are the caller's", async () => {
    const writer = await openRedisStore(REDIS_URL, { prefix: redisPrefix });
    const reader = await openRedisStore(REDIS_URL, { prefix: redisPrefix });
    const scope = { tenant_id: 'tenant', user_id: 'user' };
    await writeRun(writer, 'run-d', 20);
    for (const store of [writer, reader, reader])
      expect((await store.latestCheckpoint(scope, 'run-d'))?.channels).toEqual(step(19));
    for (let i = 20; i < 40; i++) {
      await writer.putCheckpoint(scope, { run_id: 'run-d', step: i, channels: step(i) });
      const read = await reader.latestCheckpoint(scope, 'run-d');
      expect(read?.channels).toEqual(step(i));
      (read?.channels.messages as JsonObject[] | undefined)?.pop();
      expect((await writer.latestCheckpoint(scope, 'run-d'))?.channels).toEqual(step(i));
    }
    const page = await reader.listCheckpoints(scope, 'run-d', { limit: 40 });
    expect(page.items.map((checkpoint) => checkpoint.channels)).toEqual(
      Array.from({ length: 40 }, (_, i) => step(39 - i)),
    );
    await writer.close();
    await reader.close();
  });

  it('refuses a checkpointCacheChars that is not a whole number of at least 0', async () => {
    await expect(
      openRedisStore(REDIS_URL, { prefix: redisPrefix, checkpointCacheChars: -1 }),
    ).rejects.toThrow(/checkpointCacheChars/);
  });
});

for (const [name, chars] of [
  ['no cache', 0],
  ['a cache smaller than a run', 600],
] as const) {
  describe(`checkpoint conformance with ${name}`, () => {
    describe('sqlite', () => {
      const t = useStore({
        open: (clock) =>
          openSqliteStore(join(dir, `small-${chars}.db`), { clock, checkpointCacheChars: chars }),
      });
      checkpointTests(t);
      checkpointHistoryTests(t);
    });
    describe('postgres', () => {
      const schema = freshSchema();
      const t = useStore({
        open: (clock) =>
          openPostgresStore({ url: schemaUrl(schema), clock, max: 2, checkpointCacheChars: chars }),
      });
      checkpointTests(t);
      checkpointHistoryTests(t);
    });
    describe('redis', () => {
      const t = useStore({
        open: (clock) =>
          openRedisStore(REDIS_URL, { clock, prefix: redisPrefix, checkpointCacheChars: chars }),
      });
      checkpointTests(t);
      checkpointHistoryTests(t);
    });
  });
}
