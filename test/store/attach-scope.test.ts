/**
 * Isolation of writes that name another record, against every adapter (SPEC sections 2-3):
 * - a task, action or checkpoint may only name (`session_id`) a session its writer can read: one of the
 *   same tenant and user, live (ended or not); another user's, a missing or an expired one is `not_found`
 *   naming the session, and nothing is stored (createTask, updateTask, beginAction, putCheckpoint and each
 *   of those parts of commitTurn, including PostgreSQL's one-statement turn);
 * - (Redis, and the tiered store's sessions in Redis) an id another user of the tenant already holds is
 *   refused with `conflict` on create, as the SQL and memory stores refuse it, also when two users create
 *   it at once, and the tenant-scope reads still find the first owner's record.
 *
 * On memory:, a SQLite file, PostgreSQL (a database of its own, dropped afterwards), Redis and the tiered
 * store (a key prefix of their own, removed afterwards); the servers are AGENTSTATE_TEST_POSTGRES_URL and
 * AGENTSTATE_TEST_REDIS_URL, or the README's defaults on 127.0.0.1.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.js';
import { newId } from '../../src/core/ids.js';
import type { ReadScope, Scope, StateStore } from '../../src/store/types.js';
import { ADAPTERS, expectSessionNotFound, refusal } from './attach-scope-adapters.js';

const sid = () => newId('session');
const tid = () => newId('task');

for (const adapter of ADAPTERS) {
  describe(`${adapter.name}: records name only the writer's own sessions`, () => {
    const clock = new ManualClock(Date.now());
    let store: StateStore;
    let cleanup: () => Promise<void> = async () => undefined;
    let tenant: ReadScope;
    let alice: Scope;
    let bob: Scope;
    /** alice's live session. */
    let aliceSession: string;
    /** bob's live session. */
    let bobSession: string;

    beforeAll(async () => {
      ({ store, cleanup } = await adapter.open(clock));
    });
    afterAll(async () => {
      await cleanup();
    });
    beforeEach(async () => {
      const t = `acme_${randomUUID().slice(0, 8)}`;
      tenant = { tenant_id: t };
      alice = { tenant_id: t, user_id: 'alice' };
      bob = { tenant_id: t, user_id: 'bob' };
      aliceSession = (await store.createSession(alice, { context: { who: 'alice' } })).id;
      bobSession = (await store.createSession(bob, { context: { who: 'bob' } })).id;
    });

    it("createTask naming another user's session (or none that exists) is not_found, and stores nothing", async () => {
      const id = tid();
      await expectSessionNotFound(
        store.createTask(bob, { id, type: 'bob_task', session_id: aliceSession, status_line: 'bob text' }),
        aliceSession,
      );
      const missing = sid();
      await expectSessionNotFound(store.createTask(bob, { type: 'bob_task', session_id: missing }), missing);
      expect(await store.getTask(tenant, id)).toBeNull();
      expect((await store.listTasks(bob)).items).toEqual([]);
      // What a tenant-scope context build for alice's session reads: none of bob's text.
      expect((await store.listTasks(tenant, { session_id: aliceSession })).items).toEqual([]);
      // Own session, and none at all, stay allowed.
      const own = await store.createTask(bob, { type: 'bob_task', session_id: bobSession });
      expect(own.session_id).toBe(bobSession);
      const loose = await store.createTask(bob, { type: 'bob_task', session_id: null });
      expect(loose.session_id).toBeNull();
    });

    it("putCheckpoint naming another user's session is not_found, and stores nothing", async () => {
      const run = `run_${randomUUID()}`;
      await expectSessionNotFound(
        store.putCheckpoint(bob, { run_id: run, session_id: aliceSession, step: 0, channels: { a: 1 } }),
        aliceSession,
      );
      // Also after the store has written (and remembers) a checkpoint of the run: the one-statement way.
      await store.putCheckpoint(bob, { run_id: run, session_id: bobSession, step: 0, channels: { a: 1 } });
      const missing = sid();
      await expectSessionNotFound(
        store.putCheckpoint(bob, { run_id: run, session_id: missing, step: 1, channels: { a: 2 } }),
        missing,
      );
      await expectSessionNotFound(
        store.putCheckpoint(bob, { run_id: run, session_id: aliceSession, step: 1, channels: { a: 2 } }),
        aliceSession,
      );
      const page = await store.listCheckpoints(bob, run);
      expect(page.items.map((c) => c.step)).toEqual([0]);
      expect((await store.latestCheckpoint(tenant, run))?.session_id).toBe(bobSession);
    });

    it("updateTask moving a task to another user's session (or a missing one) is not_found and changes nothing", async () => {
      const task = await store.createTask(bob, { type: 'bob_task', session_id: bobSession });
      await expectSessionNotFound(
        store.updateTask(bob, task.id, 1, { session_id: aliceSession, status_line: 'moved' }),
        aliceSession,
      );
      const missing = sid();
      await expectSessionNotFound(store.updateTask(bob, task.id, 1, { session_id: missing }), missing);
      // A tenant key writes in the owner's scope: alice's session is not bob's.
      await expectSessionNotFound(
        store.updateTask(tenant, task.id, 1, { session_id: aliceSession }),
        aliceSession,
      );
      const after = await store.getTask(tenant, task.id);
      expect(after?.version).toBe(1);
      expect(after?.session_id).toBe(bobSession);
      expect((await store.listTasks(tenant, { session_id: aliceSession })).items).toEqual([]);
      // Detaching, and keeping its own session, stay allowed.
      const detached = await store.updateTask(bob, task.id, 1, { session_id: null });
      expect(detached.session_id).toBeNull();
      const back = await store.updateTask(tenant, task.id, 2, { session_id: bobSession });
      expect(back.session_id).toBe(bobSession);
    });

    it("beginAction naming another user's session is not_found, and stores nothing", async () => {
      const task = await store.createTask(bob, { type: 'bob_task', session_id: bobSession });
      const key = `key_${randomUUID()}`;
      await expectSessionNotFound(
        store.beginAction(bob, {
          task_id: task.id,
          session_id: aliceSession,
          type: 'tool_call',
          params: { x: 1 },
          idempotency_key: key,
        }),
        aliceSession,
      );
      expect(await store.getActionByKey(bob, key)).toBeNull();
      expect((await store.listActions(bob)).items).toEqual([]);
      const own = await store.beginAction(bob, {
        task_id: task.id,
        session_id: bobSession,
        type: 'tool_call',
        params: { x: 1 },
        idempotency_key: key,
      });
      expect(own.created).toBe(true);
    });

    it("commitTurn with a part naming another user's session is not_found, and writes no part", async () => {
      const task = await store.createTask(bob, { type: 'bob_task', session_id: bobSession });
      const run = `run_${randomUUID()}`;
      const checkpoint = { run_id: run, session_id: bobSession, step: 0, channels: { s: 1 } };
      const message = { session_id: bobSession, items: [{ role: 'user' as const, content: 'hi' }] };
      const batches = [
        // The shape PostgreSQL writes in one statement: messages, a checkpoint, a created task.
        {
          messages: message,
          checkpoint,
          create_tasks: [{ type: 'bob_task', session_id: aliceSession, status_line: 'bob text' }],
        },
        { messages: message, checkpoint: { ...checkpoint, session_id: aliceSession } },
        {
          messages: message,
          checkpoint,
          update_tasks: [{ id: task.id, expected_version: 1, patch: { session_id: aliceSession } }],
        },
        {
          messages: message,
          checkpoint,
          begin_actions: [
            {
              task_id: task.id,
              session_id: aliceSession,
              type: 'tool_call',
              params: null,
              idempotency_key: `key_${randomUUID()}`,
            },
          ],
        },
        // And the transaction's way (no checkpoint).
        { create_tasks: [{ type: 'bob_task', session_id: aliceSession }] },
      ];
      for (const batch of batches) await expectSessionNotFound(store.commitTurn(bob, batch), aliceSession);
      expect(await store.listMessages(bob, bobSession)).toEqual([]);
      expect(await store.latestCheckpoint(bob, run)).toBeNull();
      expect((await store.listTasks(bob)).items.map((t) => t.id)).toEqual([task.id]);
      expect((await store.getTask(bob, task.id))?.version).toBe(1);
      expect((await store.listActions(bob)).items).toEqual([]);
      expect((await store.listTasks(tenant, { session_id: aliceSession })).items).toEqual([]);
      // The same turn naming bob's own session commits.
      const done = await store.commitTurn(bob, {
        messages: message,
        checkpoint,
        create_tasks: [{ type: 'bob_task', session_id: bobSession }],
      });
      expect(done.tasks[0]?.session_id).toBe(bobSession);
      expect(done.messages).toHaveLength(1);
    });

    it('an ended session of the user may still be named; an expired one may not (tasks outlive it)', async () => {
      const session = await store.createSession(bob, { ttl_seconds: 60 });
      const task = await store.createTask(bob, { type: 'bob_task', session_id: session.id });
      await store.endSession(bob, session.id);
      const run = `run_${randomUUID()}`;
      await store.putCheckpoint(bob, { run_id: run, session_id: session.id, step: 0, channels: {} });
      const later = await store.createTask(bob, { type: 'bob_task', session_id: session.id });
      expect(later.session_id).toBe(session.id);
      clock.advance(61_000);
      try {
        await expectSessionNotFound(
          store.createTask(bob, { type: 'bob_task', session_id: session.id }),
          session.id,
        );
        await expectSessionNotFound(
          store.putCheckpoint(bob, { run_id: run, session_id: session.id, step: 1, channels: {} }),
          session.id,
        );
        const other = await store.createTask(bob, { type: 'bob_task' });
        await expectSessionNotFound(
          store.updateTask(bob, other.id, 1, { session_id: session.id }),
          session.id,
        );
        // The task that names it outlives it: its other fields change, and restating its session is no change.
        const kept = await store.updateTask(bob, task.id, 1, {
          status_line: 'still here',
          session_id: session.id,
        });
        expect(kept.session_id).toBe(session.id);
        expect(kept.status_line).toBe('still here');
      } finally {
        clock.advance(-61_000);
      }
    });
  });
}

/** Adapters whose tenant index once let a second user take an id (Redis, and the tiered store's sessions). */
for (const adapter of ADAPTERS.filter((a) => a.name === 'redis' || a.name === 'tiered')) {
  describe(`${adapter.name}: an id is one user's within the tenant`, () => {
    const clock = new ManualClock(Date.now());
    let store: StateStore;
    let cleanup: () => Promise<void> = async () => undefined;
    let tenant: ReadScope;
    let alice: Scope;
    let bob: Scope;

    beforeAll(async () => {
      ({ store, cleanup } = await adapter.open(clock));
    });
    afterAll(async () => {
      await cleanup();
    });
    beforeEach(() => {
      const t = `acme_${randomUUID().slice(0, 8)}`;
      tenant = { tenant_id: t };
      alice = { tenant_id: t, user_id: 'alice' };
      bob = { tenant_id: t, user_id: 'bob' };
    });

    async function expectConflict(promise: Promise<unknown>, id: string): Promise<void> {
      const { code, message } = await refusal(promise);
      expect(code).toBe('conflict');
      expect(message).toContain(id);
      expect(message).toMatch(/already exists/);
    }

    it("createSession with an id another user holds is a conflict; tenant reads keep the owner's", async () => {
      const id = sid();
      await store.createSession(alice, { id, context: { who: 'alice' } });
      await expectConflict(store.createSession(bob, { id, context: { who: 'bob' } }), id);
      expect((await store.getSession(tenant, id))?.context).toEqual({ who: 'alice' });
      expect(await store.getSession(bob, id)).toBeNull();
      const listed = await store.listSessions(tenant);
      expect(listed.items.map((s) => [s.id, s.user_id])).toEqual([[id, 'alice']]);
      expect((await store.listSessions(bob)).items).toEqual([]);
      // The owner's own session still works under the tenant key, and the sweeper follows the right index.
      expect((await store.touchSession(tenant, id))?.user_id).toBe('alice');
      clock.advance(3_600_000);
      try {
        expect(await store.sweepExpired(1000)).toBeGreaterThanOrEqual(1);
        expect(await store.getSession(tenant, id)).toBeNull();
      } finally {
        clock.advance(-3_600_000);
      }
    });

    it('of two users creating one session id at once, exactly one gets it', async () => {
      for (let round = 0; round < 5; round++) {
        const id = sid();
        const results = await Promise.allSettled([
          store.createSession(alice, { id, context: { who: 'alice' } }),
          store.createSession(bob, { id, context: { who: 'bob' } }),
        ]);
        const won = results.filter((r) => r.status === 'fulfilled');
        const lost = results.filter((r) => r.status === 'rejected');
        expect(won).toHaveLength(1);
        expect(lost).toHaveLength(1);
        expect((lost[0] as PromiseRejectedResult).reason.code).toBe('conflict');
        const winner = (won[0] as PromiseFulfilledResult<{ user_id: string }>).value.user_id;
        expect((await store.getSession(tenant, id))?.user_id).toBe(winner);
        expect((await store.listSessions(tenant)).items.filter((s) => s.id === id)).toHaveLength(1);
      }
    });

    it.skipIf(adapter.name !== 'redis')(
      'createTask, beginAction and putCheckpoint with an id another user holds are conflicts',
      async () => {
        const taskId = tid();
        await store.createTask(alice, { id: taskId, type: 'alice_task' });
        await expectConflict(store.createTask(bob, { id: taskId, type: 'bob_task' }), taskId);
        expect((await store.getTask(tenant, taskId))?.type).toBe('alice_task');
        expect((await store.listTasks(tenant)).items.map((t) => [t.id, t.user_id])).toEqual([
          [taskId, 'alice'],
        ]);

        const bobTask = await store.createTask(bob, { type: 'bob_task' });
        const actionId = newId('action');
        await store.beginAction(alice, {
          id: actionId,
          task_id: taskId,
          type: 't',
          params: 'alice',
          idempotency_key: 'k_alice',
        });
        await expectConflict(
          store.beginAction(bob, {
            id: actionId,
            task_id: bobTask.id,
            type: 't',
            params: 'bob',
            idempotency_key: 'k_bob',
          }),
          actionId,
        );
        expect((await store.getAction(tenant, actionId))?.params).toBe('alice');
        expect(await store.getActionByKey(bob, 'k_bob')).toBeNull();

        const checkpointId = newId('checkpoint');
        await store.putCheckpoint(alice, {
          id: checkpointId,
          run_id: 'run_a',
          step: 0,
          channels: { who: 'alice' },
        });
        await expectConflict(
          store.putCheckpoint(bob, { id: checkpointId, run_id: 'run_b', step: 0, channels: { who: 'bob' } }),
          checkpointId,
        );
        expect((await store.getCheckpoint(tenant, checkpointId))?.channels).toEqual({ who: 'alice' });
        expect(await store.latestCheckpoint(bob, 'run_b')).toBeNull();

        // Concurrent creates of one task id by two users: exactly one wins.
        const raced = tid();
        const results = await Promise.allSettled([
          store.createTask(alice, { id: raced, type: 'alice_task' }),
          store.createTask(bob, { id: raced, type: 'bob_task' }),
        ]);
        expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
        const owner = (await store.getTask(tenant, raced))?.user_id;
        expect(
          await store.getTask({ ...tenant, user_id: owner === 'alice' ? 'bob' : 'alice' }, raced),
        ).toBeNull();
      },
    );
  });
}
