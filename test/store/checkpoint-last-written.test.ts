/**
 * A SQL store's checkpoint put encodes against the run's last checkpoint as this store wrote it, reading
 * nothing first: when another store on the same database removed that checkpoint, or replaced it under the
 * same id with other channels, the put must still store a checkpoint that reads back whole. The same case
 * runs on Redis (whose put encodes against the run's latest manifest as stored, read under the plan's
 * sequence check) and on the tiered store (checkpoints in PostgreSQL), two stores on one prefix each.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { JsonObject } from '../../src/core/json.js';
import { openStore } from '../../src/store/open.js';
import { openRedisStore } from '../../src/store/redis/index.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { openTieredStore } from '../../src/store/tiered/index.js';
import type { StateStore } from '../../src/store/types.js';
import { freshSchemas, schemaUrl } from './postgres-env.js';
import { REDIS_URL, randomPrefix, removePrefix } from './redis-env.js';
import { type TieredEnv, tieredEnv } from './tiered-env.js';

const dir = mkdtempSync(join(tmpdir(), 'agentstate-checkpoint-last-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const scope = { tenant_id: 'tenant', user_id: 'user' };

const messages = (n: number, tag = 'm') => Array.from({ length: n }, (_, i) => ({ text: `${tag}${i}` }));
const state = (n: number, tag?: string): JsonObject => ({ messages: messages(n, tag), step: n });
const id = (n: number) => `ckpt_${'a'.repeat(25)}${'bcdefg'[n]}`;

const schema = freshSchemas();
const prefixes: string[] = [];
const tiered: TieredEnv[] = [];
afterAll(async () => {
  for (const prefix of prefixes) await removePrefix(prefix);
  for (const env of tiered) await env.cleanup();
});
const backends: [string, () => Promise<() => Promise<StateStore>>][] = [
  [
    'sqlite',
    async () => {
      const file = join(dir, 'two.db');
      return () => openSqliteStore(file);
    },
  ],
  [
    'postgres',
    async () => {
      const url = schemaUrl(schema());
      return () => openStore(url);
    },
  ],
  [
    'redis',
    async () => {
      const prefix = randomPrefix();
      prefixes.push(prefix);
      return () => openRedisStore(REDIS_URL, { prefix });
    },
  ],
  [
    'tiered',
    async () => {
      const env = tieredEnv();
      tiered.push(env);
      return () => openTieredStore(env.url);
    },
  ],
];

describe.each(backends)('%s checkpoint put against the last one it wrote', (_name, database) => {
  it('stores whole what it encoded against a checkpoint another store pruned or replaced', async () => {
    const open = await database();
    const a = await open();
    const b = await open();
    try {
      const run_id = 'run_shared';
      await a.putCheckpoint(scope, { id: id(1), run_id, step: 1, channels: state(20) });
      await a.putCheckpoint(scope, { id: id(2), run_id, step: 2, parent_id: id(1), channels: state(21) });

      // b removes a's last checkpoint and writes one under the same id with other channels.
      expect(await b.pruneCheckpoints(scope, run_id, 0)).toBe(2);
      await b.putCheckpoint(scope, { id: id(2), run_id, step: 2, channels: state(5, 'other') });
      await a.putCheckpoint(scope, { id: id(3), run_id, step: 3, parent_id: id(2), channels: state(22) });
      expect((await b.getCheckpoint(scope, id(3)))?.channels).toEqual(state(22));
      expect((await b.getCheckpoint(scope, id(2)))?.channels).toEqual(state(5, 'other'));

      // b removes every checkpoint of the run: a's next put has nothing to encode against.
      expect(await b.pruneCheckpoints(scope, run_id, 0)).toBe(2);
      await a.putCheckpoint(scope, { id: id(4), run_id, step: 4, parent_id: id(3), channels: state(23) });
      expect((await b.latestCheckpoint(scope, run_id))?.channels).toEqual(state(23));
      await a.putCheckpoint(scope, { id: id(5), run_id, step: 5, parent_id: id(4), channels: state(24) });
      expect((await b.latestCheckpoint(scope, run_id))?.channels).toEqual(state(24));

      // A taken id is still a conflict, and writes nothing.
      await expect(
        a.putCheckpoint(scope, { id: id(5), run_id, step: 6, parent_id: id(5), channels: state(25) }),
      ).rejects.toMatchObject({ code: 'conflict' });
      expect((await b.latestCheckpoint(scope, run_id))?.channels).toEqual(state(24));
    } finally {
      await a.close();
      await b.close();
    }
  });
});
