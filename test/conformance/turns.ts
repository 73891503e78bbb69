/**
 * Atomic turns. Rules: commitTurn applies, in this order, the session patch, created tasks, task updates,
 * begun actions (same idempotency rule as beginAction; the task may be one created in the same batch),
 * completed actions, messages and the checkpoint. Either all of it becomes visible or none of it does: bad
 * input, a stale version (`version_conflict` naming the record), a missing record (`not_found`) or a refused
 * transition leaves every record of the batch unchanged. TurnResult.session is the session after the batch
 * when the batch patched it or appended to it, else null.
 */
import { describe, expect, it } from 'vitest';
import { newId } from '../../src/core/ids.js';
import { OPEN_TASK_STATES } from '../../src/core/model.js';
import type { StateStore, TurnBatch } from '../../src/store/types.js';
import type { Ctx } from './context.js';
import { expectError, expectInvalid, ms } from './expect.js';
import { action, session, task, uniqueKey } from './fixtures.js';

/** Everything a turn can touch, read back through the API, to compare before and after a failed turn. */
async function snapshot(store: StateStore, t: Ctx, sessionId: string, taskIds: string[], runId: string) {
  return {
    session: await store.getSession(t.scope, sessionId),
    messages: await store.listMessages(t.scope, sessionId, { limit: 1000 }),
    tasks: await Promise.all(taskIds.map((id) => store.getTask(t.scope, id))),
    events: await Promise.all(taskIds.map((id) => store.listTaskEvents(t.scope, id))),
    allTasks: (await store.listTasks(t.scope, { limit: 500 })).items,
    actions: (await store.listActions(t.scope, { limit: 500 })).items,
    checkpoints: (await store.listCheckpoints(t.scope, runId)).items,
  };
}

export function turnTests(t: Ctx): void {
  async function setup() {
    const s = await session(t.store, t.scope, 600);
    const a = await task(t.store, t.scope, s.id);
    const b = await task(t.store, t.scope, s.id);
    const pending = await action(t.store, t.scope, a.id);
    await t.store.appendMessages(t.scope, s.id, [{ role: 'user', content: 'first' }]);
    return { s, a, b, pending, run: `run-${uniqueKey()}` };
  }

  function fullBatch(x: Awaited<ReturnType<typeof setup>>, stale: 'none' | 'session' | 'task'): TurnBatch {
    return {
      session: {
        id: x.s.id,
        expected_version: stale === 'session' ? 99 : x.s.version,
        patch: { context: { turn: 2 } },
      },
      create_tasks: [{ type: 'hotel', session_id: x.s.id, slots: { city: 'Lisbon' } }],
      update_tasks: [
        {
          id: x.a.id,
          expected_version: 1,
          patch: { state: 'COLLECTING', slots: { from: 'ZRH', to: 'LIS' } },
        },
        { id: x.b.id, expected_version: stale === 'task' ? 7 : 1, patch: { state: 'CANCELLED' } },
      ],
      begin_actions: [{ task_id: x.a.id, type: 'tool_call', params: { q: 1 }, idempotency_key: uniqueKey() }],
      complete_actions: [{ id: x.pending.id, status: 'SUCCESS', result: { ok: true } }],
      messages: {
        session_id: x.s.id,
        items: [
          { role: 'user', content: 'to Lisbon' },
          { role: 'assistant', content: 'When?' },
        ],
      },
      checkpoint: { run_id: x.run, session_id: x.s.id, step: 1, channels: { messages: ['a', 'b'], step: 1 } },
    };
  }

  describe('atomic turns', () => {
    it('commits every part of a turn together', async () => {
      const x = await setup();
      t.clock.advance(10_000);
      const result = await t.store.commitTurn(t.scope, fullBatch(x, 'none'));
      expect(result.session?.version).toBe(2);
      expect(result.session?.context).toEqual({ turn: 2 });
      expect(ms(result.session?.expires_at ?? '')).toBe(t.clock.now() + 600_000);
      expect(result.tasks.map((k) => [k.type, k.state])).toEqual([
        ['hotel', 'INIT'],
        ['flight', 'COLLECTING'],
        ['flight', 'CANCELLED'],
      ]);
      expect(result.actions.map((a) => a.status)).toEqual(['PENDING', 'SUCCESS']);
      expect(result.messages.map((m) => m.seq)).toEqual([2, 3]);
      expect(result.checkpoint?.channels).toEqual({ messages: ['a', 'b'], step: 1 });
      expect(await t.store.getSession(t.scope, x.s.id)).toEqual(result.session);
      expect(await t.store.getTask(t.scope, x.a.id)).toEqual(result.tasks[1]);
      expect(await t.store.getTask(t.scope, result.tasks[0]!.id)).toEqual(result.tasks[0]);
      expect(await t.store.getAction(t.scope, x.pending.id)).toEqual(result.actions[1]);
      expect(await t.store.latestCheckpoint(t.scope, x.run)).toEqual(result.checkpoint);
      const events = await t.store.listTaskEvents(t.scope, x.a.id);
      expect(events.map((e) => e.to_state)).toEqual(['INIT', 'COLLECTING']);
      expect((await t.store.listMessages(t.scope, x.s.id)).map((m) => m.content)).toEqual([
        'first',
        'to Lisbon',
        'When?',
      ]);
    });

    it('one stale task version leaves every record of the batch unchanged', async () => {
      const x = await setup();
      const before = await snapshot(t.store, t, x.s.id, [x.a.id, x.b.id], x.run);
      t.clock.advance(10_000);
      await expectError(
        t.store,
        t.store.commitTurn(t.scope, fullBatch(x, 'task')),
        'version_conflict',
        x.b.id,
      );
      expect(await snapshot(t.store, t, x.s.id, [x.a.id, x.b.id], x.run)).toEqual(before);
    });

    it('a stale session version leaves every record of the batch unchanged', async () => {
      const x = await setup();
      const before = await snapshot(t.store, t, x.s.id, [x.a.id, x.b.id], x.run);
      await expectError(
        t.store,
        t.store.commitTurn(t.scope, fullBatch(x, 'session')),
        'version_conflict',
        x.s.id,
      );
      expect(await snapshot(t.store, t, x.s.id, [x.a.id, x.b.id], x.run)).toEqual(before);
    });

    it('a refused transition, a missing task or bad JSON late in the batch also changes nothing', async () => {
      const x = await setup();
      const before = await snapshot(t.store, t, x.s.id, [x.a.id, x.b.id], x.run);
      const good = fullBatch(x, 'none');
      const refused: TurnBatch = {
        ...good,
        update_tasks: [good.update_tasks![0]!, { id: x.b.id, expected_version: 1, patch: { state: 'DONE' } }],
      };
      await expectInvalid(t.store, t.store.commitTurn(t.scope, refused), 'cannot go from INIT to DONE');
      const missing = newId('task');
      const gone: TurnBatch = { ...good, update_tasks: [{ id: missing, expected_version: 1, patch: {} }] };
      await expectError(t.store, t.store.commitTurn(t.scope, gone), 'not_found', missing);
      const badJson: TurnBatch = {
        ...good,
        checkpoint: { run_id: x.run, step: 1, channels: { when: new Date() as never } },
      };
      await expectInvalid(t.store, t.store.commitTurn(t.scope, badJson), 'channels.when');
      const doneAction: TurnBatch = {
        ...good,
        complete_actions: [{ id: newId('action'), status: 'SUCCESS' }],
      };
      await expectError(t.store, t.store.commitTurn(t.scope, doneAction), 'not_found');
      expect(await snapshot(t.store, t, x.s.id, [x.a.id, x.b.id], x.run)).toEqual(before);
    });

    it('appending to an expired session fails the whole turn', async () => {
      const s = await session(t.store, t.scope, 60);
      const k = await task(t.store, t.scope, s.id);
      t.clock.advance(60_000);
      await expectError(
        t.store,
        t.store.commitTurn(t.scope, {
          update_tasks: [{ id: k.id, expected_version: 1, patch: { state: 'COLLECTING' } }],
          messages: { session_id: s.id, items: [{ role: 'user', content: 'late' }] },
        }),
        'not_found',
        s.id,
      );
      expect(await t.store.getTask(t.scope, k.id)).toEqual(k);
    });

    it('an action may be begun for a task created in the same turn, and keys stay idempotent', async () => {
      const s = await session(t.store, t.scope);
      const taskId = newId('task');
      const key = uniqueKey();
      const result = await t.store.commitTurn(t.scope, {
        create_tasks: [{ id: taskId, type: 'deploy', session_id: s.id }],
        begin_actions: [
          { task_id: taskId, type: 'tool_call', tool: 'plan', params: null, idempotency_key: key },
        ],
      });
      expect(result.session).toBeNull();
      expect(result.actions[0]?.task_id).toBe(taskId);
      const again = await t.store.commitTurn(t.scope, {
        begin_actions: [
          { task_id: taskId, type: 'tool_call', tool: 'plan', params: null, idempotency_key: key },
        ],
      });
      expect(again.actions[0]?.id).toBe(result.actions[0]?.id);
      expect((await t.store.listActions(t.scope, { task_id: taskId })).items).toHaveLength(1);
    });

    it('messages alone renew the session TTL and return the session', async () => {
      const s = await session(t.store, t.scope, 60);
      t.clock.advance(59_000);
      const result = await t.store.commitTurn(t.scope, {
        messages: { session_id: s.id, items: [{ role: 'user', content: 'still here' }] },
      });
      expect(result.session?.version).toBe(1);
      expect(ms(result.session?.expires_at ?? '')).toBe(t.clock.now() + 60_000);
      t.clock.advance(59_000);
      expect(await t.store.getSession(t.scope, s.id)).not.toBeNull();
    });

    it('an empty batch changes nothing and returns empty parts', async () => {
      const result = await t.store.commitTurn(t.scope, {});
      expect(result).toEqual({ session: null, tasks: [], actions: [], messages: [], checkpoint: null });
    });

    it('concurrent turns on one task: exactly one of two with the same version wins', async () => {
      const k = await task(t.store, t.scope);
      const outcomes = await Promise.allSettled([
        t.store.commitTurn(t.scope, {
          update_tasks: [{ id: k.id, expected_version: 1, patch: { data: { by: 'a' } } }],
        }),
        t.store.commitTurn(t.scope, {
          update_tasks: [{ id: k.id, expected_version: 1, patch: { data: { by: 'b' } } }],
        }),
      ]);
      expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
      const read = await t.store.getTask(t.scope, k.id);
      expect(read?.version).toBe(2);
    });
  });

  describe('a turn that frees its lease', () => {
    async function held(owner = 'runner-a') {
      const x = await setup();
      const name = `session:${x.s.id}`;
      expect(await t.store.acquireLease(t.scope, name, owner, 60_000)).not.toBeNull();
      return { ...x, name };
    }
    /** The shape of a run's usual final commit: its messages and its checkpoint. */
    function finalBatch(x: Awaited<ReturnType<typeof held>>): TurnBatch {
      return {
        messages: { session_id: x.s.id, items: [{ role: 'assistant', content: 'Done.' }] },
        checkpoint: { run_id: x.run, session_id: x.s.id, step: 0, label: 'turn', channels: { done: true } },
      };
    }
    const takenBy = async (name: string, owner: string) =>
      (await t.store.acquireLease(t.scope, name, owner, 1000)) !== null;

    it("frees its owner's lease with the batch, whatever the batch's shape", async () => {
      for (const shape of ['final', 'full', 'no checkpoint'] as const) {
        const x = await held();
        const batch =
          shape === 'final'
            ? finalBatch(x)
            : shape === 'full'
              ? fullBatch(x, 'none')
              : { messages: finalBatch(x).messages };
        const result = await t.store.commitTurn(t.scope, {
          ...batch,
          release_lease: { name: x.name, owner: 'runner-a' },
        });
        expect(result.lease_released, shape).toBe(true);
        expect(result.messages.length, shape).toBeGreaterThan(0);
        expect(await takenBy(x.name, 'runner-b'), shape).toBe(true);
      }
    });

    it('leaves a lease another owner holds, and still commits the turn', async () => {
      const x = await held('runner-b');
      const result = await t.store.commitTurn(t.scope, {
        ...finalBatch(x),
        release_lease: { name: x.name, owner: 'runner-a' },
      });
      expect(result.lease_released).toBe(false);
      expect(result.checkpoint?.label).toBe('turn');
      expect(await takenBy(x.name, 'runner-c')).toBe(false);
      // Without release_lease the result says nothing of leases.
      const plain = await t.store.commitTurn(t.scope, {
        messages: { session_id: x.s.id, items: [{ role: 'user', content: 'again' }] },
      });
      expect(plain.lease_released).toBeUndefined();
    });

    it('a failed batch frees nothing', async () => {
      const x = await held();
      await expectError(
        t.store,
        t.store.commitTurn(t.scope, {
          ...fullBatch(x, 'task'),
          release_lease: { name: x.name, owner: 'runner-a' },
        }),
        'version_conflict',
      );
      expect(await takenBy(x.name, 'runner-b')).toBe(false);
    });

    it('refuses a malformed release_lease and changes nothing', async () => {
      const x = await held();
      const before = await snapshot(t.store, t, x.s.id, [x.a.id, x.b.id], x.run);
      const bad = [
        { name: x.name, owner: 'runner-a', ttl_ms: 5 },
        { name: '', owner: 'runner-a' },
        { name: x.name, owner: 7 },
        'runner-a',
      ] as unknown as NonNullable<TurnBatch['release_lease']>[];
      for (const release_lease of bad) {
        await expectInvalid(
          t.store,
          t.store.commitTurn(t.scope, { ...finalBatch(x), release_lease }),
          'release_lease',
        );
      }
      expect(await snapshot(t.store, t, x.s.id, [x.a.id, x.b.id], x.run)).toEqual(before);
      expect(await takenBy(x.name, 'runner-b')).toBe(false);
    });
  });

  describe('a turn that writes memory', () => {
    /** The shape of a run's final commit that marks a task DONE: messages, the task, a checkpoint. */
    function doneBatch(x: Awaited<ReturnType<typeof setup>>): TurnBatch {
      return {
        messages: { session_id: x.s.id, items: [{ role: 'assistant', content: 'Booked.' }] },
        update_tasks: [{ id: x.a.id, expected_version: x.a.version, patch: { status_line: 'booked' } }],
        checkpoint: { run_id: x.run, session_id: x.s.id, step: 0, label: 'turn', channels: { done: true } },
      };
    }
    const seat = { namespace: 'preferences', key: 'flight_booking.seat', value: 'aisle' };

    it('writes the items with the rest of the batch, whatever its shape, as putMemory writes them', async () => {
      for (const shape of ['final', 'full', 'memory only'] as const) {
        const x = await setup();
        // Each shape its own keys; the last its own user (a batch of memory only, no session).
        const mine =
          shape === 'memory only' ? { ...t.scope, user_id: `${t.scope.user_id}_memory_only` } : t.scope;
        const seat = { namespace: 'preferences', key: `seat.${shape}`, value: 'aisle' };
        const cabin = { namespace: 'preferences', key: `cabin.${shape}`, value: { class: 'business' } };
        const kept = await t.store.putMemory(mine, { ...seat, value: 'window' });
        t.clock.advance(5_000);
        const base = shape === 'final' ? doneBatch(x) : shape === 'full' ? fullBatch(x, 'none') : {};
        const result = await t.store.commitTurn(mine, {
          ...base,
          put_memory: [seat, { ...cabin, ttl_seconds: 600 }],
        });
        expect(
          result.memory?.map((m) => [m.namespace, m.key, m.value]),
          shape,
        ).toEqual([
          ['preferences', seat.key, 'aisle'],
          ['preferences', cabin.key, { class: 'business' }],
        ]);
        const [written, fresh] = result.memory ?? [];
        // A live item keeps its created_at; a new one is created now.
        expect(written?.created_at, shape).toBe(kept.created_at);
        expect(ms(written?.updated_at ?? ''), shape).toBe(ms(kept.updated_at) + 5_000);
        expect(written?.expires_at, shape).toBeNull();
        expect(ms(fresh?.expires_at ?? ''), shape).toBe(ms(fresh?.created_at ?? '') + 600_000);
        expect(await t.store.getMemory(mine, seat.namespace, seat.key), shape).toEqual(written);
        expect(await t.store.getMemory(mine, cabin.namespace, cabin.key), shape).toEqual(fresh);
        // Only the scope's user has them.
        expect(await t.store.getMemory(t.neighbour, cabin.namespace, cabin.key), shape).toBeNull();
        if (shape !== 'memory only') expect(result.messages.length, shape).toBeGreaterThan(0);
      }
    });

    it('says nothing of memory without put_memory, and an empty list writes none', async () => {
      const x = await setup();
      const plain = await t.store.commitTurn(t.scope, doneBatch(x));
      expect(plain.memory).toBeUndefined();
      const empty = await t.store.commitTurn(t.scope, {
        messages: { session_id: x.s.id, items: [{ role: 'user', content: 'again' }] },
        put_memory: [],
      });
      expect(empty.memory).toEqual([]);
      expect((await t.store.listMemory(t.scope, 'preferences')).items).toEqual([]);
    });

    it('a failed batch writes no item', async () => {
      const x = await setup();
      const done = doneBatch(x);
      const stale: TurnBatch = {
        ...done,
        update_tasks: [{ id: x.a.id, expected_version: 99, patch: { status_line: 'booked' } }],
      };
      for (const batch of [fullBatch(x, 'task'), stale]) {
        await expectError(
          t.store,
          t.store.commitTurn(t.scope, { ...batch, put_memory: [seat] }),
          'version_conflict',
        );
        expect(await t.store.getMemory(t.scope, seat.namespace, seat.key)).toBeNull();
      }
    });

    it('refuses a malformed put_memory and changes nothing', async () => {
      const x = await setup();
      const before = await snapshot(t.store, t, x.s.id, [x.a.id, x.b.id], x.run);
      const bad = [
        'aisle',
        [{ namespace: 'preferences', key: 'seat' }],
        [{ ...seat, namespace: '' }],
        [{ ...seat, key: 7 }],
        [{ ...seat, value: new Date(0) }],
        [{ ...seat, ttl_seconds: 0 }],
        [{ ...seat, colour: 'red' }],
        [seat, { ...seat, value: 'window' }],
      ] as unknown as NonNullable<TurnBatch['put_memory']>[];
      for (const put_memory of bad) {
        await expectInvalid(
          t.store,
          t.store.commitTurn(t.scope, { ...doneBatch(x), put_memory }),
          'put_memory',
        );
      }
      expect(await snapshot(t.store, t, x.s.id, [x.a.id, x.b.id], x.run)).toEqual(before);
      expect((await t.store.listMemory(t.scope, 'preferences')).items).toEqual([]);
    });
  });

  describe('a turn that lists its open tasks', () => {
    const openNow = async (sessionId: string, limit: number) =>
      (await t.store.listTasks(t.scope, { session_id: sessionId, state: OPEN_TASK_STATES, limit })).items;

    it('gives the open tasks of the session once the batch is written, as a read after it would', async () => {
      for (const shape of ['final', 'full', 'messages only', 'move in'] as const) {
        const x = await setup();
        // Another open task of the user in another session, and a closed one of this session.
        const elsewhere = await session(t.store, t.scope, 600);
        await task(t.store, t.scope, elsewhere.id);
        const closed = await task(t.store, t.scope, x.s.id);
        await t.store.updateTask(t.scope, closed.id, closed.version, { state: 'CANCELLED' });
        const moved = await task(t.store, t.scope, elsewhere.id);
        const final: TurnBatch = {
          messages: { session_id: x.s.id, items: [{ role: 'assistant', content: 'Done.' }] },
          create_tasks: [{ type: 'hotel', session_id: x.s.id }],
          update_tasks: [
            { id: x.a.id, expected_version: 1, patch: { state: 'CANCELLED', status_line: 'off' } },
          ],
          checkpoint: { run_id: x.run, session_id: x.s.id, step: 0, label: 'turn', channels: { done: true } },
        };
        const moveIn: TurnBatch = {
          ...final,
          create_tasks: [],
          update_tasks: [
            { id: x.b.id, expected_version: 1, patch: { state: 'CANCELLED' } },
            { id: moved.id, expected_version: 1, patch: { session_id: x.s.id } },
          ],
        };
        const batch: TurnBatch =
          shape === 'final'
            ? final
            : shape === 'full'
              ? fullBatch(x, 'none')
              : shape === 'move in'
                ? moveIn
                : { messages: final.messages };
        const result = await t.store.commitTurn(t.scope, {
          ...batch,
          list_open_tasks: { session_id: x.s.id, limit: 100 },
        });
        expect(result.open_tasks, shape).toEqual(await openNow(x.s.id, 100));
        expect(result.open_tasks?.length, shape).toBeGreaterThan(0);
        // The newest first, at most the limit.
        const again = await t.store.commitTurn(t.scope, {
          messages: { session_id: x.s.id, items: [{ role: 'user', content: 'more' }] },
          list_open_tasks: { session_id: x.s.id, limit: 1 },
        });
        expect(again.open_tasks, shape).toEqual(await openNow(x.s.id, 1));
      }
    });

    it('a limit smaller than the list keeps the newest, also when the batch closes some of them', async () => {
      const x = await setup();
      const more = [];
      for (let i = 0; i < 4; i++) {
        t.clock.advance(1_000);
        more.push(await task(t.store, t.scope, x.s.id));
      }
      const newest = more[3] as (typeof more)[number];
      const result = await t.store.commitTurn(t.scope, {
        messages: { session_id: x.s.id, items: [{ role: 'assistant', content: 'ok' }] },
        update_tasks: [{ id: newest.id, expected_version: newest.version, patch: { state: 'CANCELLED' } }],
        checkpoint: { run_id: x.run, session_id: x.s.id, step: 0, label: 'turn', channels: {} },
        list_open_tasks: { session_id: x.s.id, limit: 3 },
      });
      expect(result.open_tasks).toEqual(await openNow(x.s.id, 3));
      expect(result.open_tasks?.map((k) => k.id)).toEqual([more[2]?.id, more[1]?.id, more[0]?.id]);
    });

    it('says nothing of open tasks without list_open_tasks', async () => {
      const x = await setup();
      const plain = await t.store.commitTurn(t.scope, {
        messages: { session_id: x.s.id, items: [{ role: 'user', content: 'hi' }] },
      });
      expect(plain.open_tasks).toBeUndefined();
    });

    it('refuses a malformed list_open_tasks and changes nothing', async () => {
      const x = await setup();
      const before = await snapshot(t.store, t, x.s.id, [x.a.id, x.b.id], x.run);
      const bad = [
        x.s.id,
        { session_id: x.s.id },
        { session_id: x.s.id, limit: 0 },
        { session_id: x.s.id, limit: 501 },
        { session_id: x.s.id, limit: 2.5 },
        { session_id: '', limit: 10 },
        { session_id: x.s.id, limit: 10, state: 'DONE' },
      ] as unknown as NonNullable<TurnBatch['list_open_tasks']>[];
      for (const list_open_tasks of bad) {
        await expectInvalid(
          t.store,
          t.store.commitTurn(t.scope, { ...fullBatch(x, 'none'), list_open_tasks }),
          'list_open_tasks',
        );
      }
      expect(await snapshot(t.store, t, x.s.id, [x.a.id, x.b.id], x.run)).toEqual(before);
    });
  });
}
