/**
 * Server instances keep no state of their own: three real `agentstate serve` processes on one store serve
 * one session's turns in any order, and optimistic concurrency holds across them.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  API_KEY,
  call,
  type Instance,
  randomSuffix,
  startInstances,
  stopInstances,
} from './instances-helpers.js';

const PG_BASE = process.env.AGENTSTATE_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const REDIS_BASE = process.env.AGENTSTATE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const withSchema = (schema: string) => `${PG_BASE}${PG_BASE.includes('?') ? '&' : '?'}schema=${schema}`;

const TURNS = [
  'I need a flight from Beijing to Shanghai',
  'next Wednesday',
  'business class',
  'my name is Ada Lovelace',
  'yes',
];

interface Message {
  seq: number;
  role: string;
  content: string;
}
interface Task {
  id: string;
  type: string;
  state: string;
}
interface Session {
  id: string;
  version: number;
  context: Record<string, unknown>;
}

async function dropSchema(schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: PG_BASE });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await client.end();
  }
}

/** Deletes the keys under `prefix`; answers how many there were. */
async function dropRedisPrefix(prefix: string): Promise<number> {
  const redis = new Redis(REDIS_BASE, { lazyConnect: true, maxRetriesPerRequest: 2 });
  await redis.connect();
  let deleted = 0;
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
      cursor = next;
      if (keys.length > 0) deleted += await redis.del(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
  return deleted;
}

function statelessSuite(name: string, storeUrl: string, cleanup: () => Promise<void>): void {
  describe(`server instances on ${name}`, { timeout: 120_000 }, () => {
    const dir = mkdtempSync(join(tmpdir(), 'agentstate-instances-'));
    let instances: Instance[] = [];
    let token = '';
    let sessionId = '';
    const at = (i: number) => (instances[i] as Instance).url;

    beforeAll(async () => {
      instances = await startInstances(storeUrl, dir, 3);
      const minted = await call<{ token: string }>(at(0), 'POST', '/v1/tokens', {
        token: API_KEY,
        body: { user_id: `ada-${randomSuffix()}`, ttl_seconds: 3600 },
      });
      expect(minted.status).toBe(201);
      token = minted.body.token;
    }, 120_000);

    afterAll(async () => {
      await stopInstances(instances);
      for (const instance of instances) expect(await instance.exited).toBe(0);
      await cleanup();
      rmSync(dir, { recursive: true, force: true });
    }, 60_000);

    it('a session created on A runs its turns on B, C then A and ends DONE, read alike everywhere', async () => {
      const made = await call<Session>(at(0), 'POST', '/v1/sessions', {
        token,
        body: { agent: 'flight_booking' },
      });
      expect(made.status).toBe(201);
      sessionId = made.body.id;
      const order = [1, 2, 0, 1, 2];
      for (const [i, input] of TURNS.entries()) {
        const turn = await call<{ reply: string; tasks: Task[] }>(
          at(order[i] as number),
          'POST',
          `/v1/sessions/${sessionId}/turns`,
          { token, body: { input } },
        );
        expect({ input, status: turn.status }).toEqual({ input, status: 200 });
        expect(turn.body.reply.length).toBeGreaterThan(0);
      }
      const seen: Message[][] = [];
      for (let i = 0; i < 3; i++) {
        const tasks = await call<{ items: Task[] }>(at(i), 'GET', `/v1/tasks?session_id=${sessionId}`, {
          token,
        });
        expect(tasks.status).toBe(200);
        const booking = tasks.body.items.filter((t) => t.type === 'flight_booking');
        expect(booking.map((t) => t.state)).toEqual(['DONE']);
        const messages = await call<{ items: Message[] }>(
          at(i),
          'GET',
          `/v1/sessions/${sessionId}/messages?limit=1000`,
          { token },
        );
        expect(messages.status).toBe(200);
        const items = messages.body.items;
        expect(items.map((m) => m.seq)).toEqual(items.map((_, k) => k + 1));
        expect(items.filter((m) => m.role === 'user').map((m) => m.content)).toEqual(TURNS);
        seen.push(items);
      }
      expect(seen[1]).toEqual(seen[0]);
      expect(seen[2]).toEqual(seen[0]);
    });

    it('30 concurrent PATCHes with one If-Match over three instances: one 200, 29 version_conflict', async () => {
      const made = await call<Session>(at(0), 'POST', '/v1/sessions', { token, body: {} });
      expect(made.status).toBe(201);
      const id = made.body.id;
      const version = made.body.version;
      const answers = await Promise.all(
        Array.from({ length: 30 }, (_, n) =>
          call<Session & { error?: { code: string } }>(at(n % 3), 'PATCH', `/v1/sessions/${id}`, {
            token,
            headers: { 'if-match': `"${version}"` },
            body: { context: { writer: n } },
          }),
        ),
      );
      const winners = answers.flatMap((a, n) => (a.status === 200 ? [n] : []));
      expect(winners).toHaveLength(1);
      const losers = answers.filter((a) => a.status !== 200);
      expect(losers.map((a) => [a.status, a.body.error?.code])).toEqual(
        Array.from({ length: 29 }, () => [409, 'version_conflict']),
      );
      for (let i = 0; i < 3; i++) {
        const read = await call<Session>(at(i), 'GET', `/v1/sessions/${id}`, { token });
        expect(read.status).toBe(200);
        expect(read.body.version).toBe(version + 1);
        expect(read.body.context).toEqual({ writer: winners[0] });
      }
    });
  });
}

const pgSchema = `inst_${randomSuffix()}`;
statelessSuite('postgres', withSchema(pgSchema), () => dropSchema(pgSchema));

const tieredSchema = `inst_${randomSuffix()}`;
const tieredPrefix = `inst_${randomSuffix()}`;
statelessSuite(
  'redis tiered over postgres',
  `${REDIS_BASE}?prefix=${tieredPrefix}&durable=${encodeURIComponent(withSchema(tieredSchema))}`,
  async () => {
    const deleted = await dropRedisPrefix(tieredPrefix);
    await dropSchema(tieredSchema);
    // The tiered store really kept its hot state in Redis under this prefix.
    expect(deleted).toBeGreaterThan(0);
  },
);
