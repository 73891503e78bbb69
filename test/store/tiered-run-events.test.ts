/**
 * Run events on the tiered store (src/store/tiered/durable.ts): they live in PostgreSQL, written by a
 * turn's durable commit together with the message events of the Redis half it prepared; the session's
 * turn lock keeps appends out until that half is written, so the events tell the seqs the messages got.
 */
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { isAgentStateError } from '../../src/core/errors.js';
import type { Message } from '../../src/core/model.js';
import { openTieredStore } from '../../src/store/tiered/index.js';
import type { Scope, StateStore } from '../../src/store/types.js';
import { adminQuery } from './postgres-env.js';
import { keysOf, REDIS_URL } from './redis-env.js';
import { tieredEnv } from './tiered-env.js';

const env = tieredEnv();
const redis = new Redis(REDIS_URL);
afterAll(async () => {
  redis.disconnect();
  await env.cleanup();
});

let n = 0;
const freshScope = (): Scope => ({ tenant_id: `t_${env.schema}_${++n}`, user_id: 'u1' });

async function rows(tenant: string): Promise<number> {
  const result = await adminQuery(
    `SELECT count(*)::int AS n FROM "${env.schema}".run_events WHERE tenant_id = $1`,
    [tenant],
  );
  return result.rows[0].n as number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('tiered store: run events', () => {
  it('live in PostgreSQL only, with the messages’ events of the turn', async () => {
    const store = await openTieredStore(env.url);
    try {
      const scope = freshScope();
      const session = await store.createSession(scope, { ttl_seconds: 600 });
      await store.appendRunEvents(scope, {
        session_id: session.id,
        run_id: 'r',
        events: [{ type: 'run.started' }],
      });
      const written = await store.commitTurn(scope, {
        messages: { session_id: session.id, items: [{ role: 'assistant', content: 'hi' }] },
        events: { session_id: session.id, run_id: 'r', final: () => ({ type: 'run.completed' }) },
      });
      expect(await rows(scope.tenant_id)).toBe(3);
      const redisKeys = await keysOf(redis, env.prefix);
      expect(redisKeys.filter((key) => /:evx?:/.test(key))).toEqual([]);
      const events = await store.listRunEvents(scope, session.id, 'r');
      expect(events.map((e) => e.type)).toEqual(['run.started', 'message.created', 'run.completed']);
      expect(events[1]?.data.message).toEqual(JSON.parse(JSON.stringify(written.messages[0])));
      expect(await store.listRunEvents({ tenant_id: scope.tenant_id }, session.id, 'r')).toEqual(events);
      expect(await store.listRunEvents({ ...scope, user_id: 'u2' }, session.id, 'r')).toEqual([]);
    } finally {
      await store.close();
    }
  });

  it('an append waits for a turn with run events, whose events tell the seqs its messages got', async () => {
    let meanwhile: Promise<Message[]> | null = null;
    let store: StateStore | null = null;
    const scope = freshScope();
    let sessionId = '';
    store = await openTieredStore(env.url, {
      afterDurableCommit: async () => {
        meanwhile = (store as StateStore).appendMessages(scope, sessionId, [
          { role: 'user', content: 'meanwhile' },
        ]);
        await sleep(150);
      },
    });
    try {
      const session = await store.createSession(scope, { ttl_seconds: 600 });
      sessionId = session.id;
      await store.appendMessages(scope, session.id, [{ role: 'user', content: 'first' }]);
      const written = await store.commitTurn(scope, {
        messages: {
          session_id: session.id,
          items: [
            { role: 'assistant', content: 'a' },
            { role: 'assistant', content: 'b' },
          ],
        },
        events: { session_id: session.id, run_id: 'r' },
      });
      expect(meanwhile).not.toBeNull();
      const [late] = await (meanwhile as unknown as Promise<Message[]>);
      expect(late?.seq).toBe(4);
      const messages = await store.listMessages(scope, session.id);
      expect(messages.map((m) => [m.seq, m.content])).toEqual([
        [1, 'first'],
        [2, 'a'],
        [3, 'b'],
        [4, 'meanwhile'],
      ]);
      const events = await store.listRunEvents(scope, session.id, 'r');
      expect(events.map((e) => e.data.message)).toEqual(JSON.parse(JSON.stringify(messages.slice(1, 3))));
      expect(written.messages).toEqual(messages.slice(1, 3));
    } finally {
      await store.close();
    }
  });

  it('a failure after the durable commit leaves the events with the durable part (durable_committed)', async () => {
    let inject = false;
    const store = await openTieredStore(env.url, {
      afterDurableCommit: () => {
        if (inject) throw new Error('injected crash');
      },
    });
    try {
      const scope = freshScope();
      const session = await store.createSession(scope, { ttl_seconds: 600 });
      const task = await store.createTask(scope, { type: 'flight', session_id: session.id });
      inject = true;
      const error = await store
        .commitTurn(scope, {
          update_tasks: [{ id: task.id, expected_version: 1, patch: { state: 'COLLECTING' } }],
          messages: { session_id: session.id, items: [{ role: 'assistant', content: 'lost' }] },
          events: { session_id: session.id, run_id: 'r', final: () => ({ type: 'run.completed' }) },
        })
        .catch((e: unknown) => e);
      expect(isAgentStateError(error) && error.details).toMatchObject({ durable_committed: true });
      expect((await store.getTask(scope, task.id))?.state).toBe('COLLECTING');
      expect(await store.listMessages(scope, session.id)).toEqual([]);
      const events = await store.listRunEvents(scope, session.id, 'r');
      expect(events.map((e) => e.type)).toEqual(['task.updated', 'message.created', 'run.completed']);
    } finally {
      await store.close();
    }
  });

  it('checks runEventTtlSeconds under its own name', async () => {
    const error = await openTieredStore(env.url, { runEventTtlSeconds: 0 }).catch((e: unknown) => e);
    expect(isAgentStateError(error) && error.code).toBe('invalid_request');
    expect(String((error as Error).message)).toMatch(
      /^\[tiered\] runEventTtlSeconds must be a positive integer/,
    );
  });
});
