/**
 * Turns that carry more than records (the rules of atomic turns in turns.ts hold for them too): a batch
 * that frees its owner's lease (`release_lease`), one that writes memory (`put_memory`), and one that lists
 * the open tasks of its session once written (`list_open_tasks`).
 */
import { describe, expect, it } from 'vitest';
import { OPEN_TASK_STATES } from '../../core/model.js';
import type { TurnBatch } from '../../store/types.js';
import type { Ctx } from './context.js';
import { expectError, expectInvalid, ms } from './expect.js';
import { session, task } from './fixtures.js';
import { snapshot, turnFixtures } from './turn-fixtures.js';

export function turnOptionTests(t: Ctx): void {
  const { setup, fullBatch } = turnFixtures(t);

  describe('a turn that frees its lease', () => {
    async function held(owner = 'runner-a') {
      const x = await setup();
      const name = `session:${x.s.id}`;
      const lease = await t.store.acquireLease(t.scope, name, owner, 60_000);
      expect(lease).not.toBeNull();
      return { ...x, name, expires_at: lease?.expires_at ?? '' };
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

    it('frees it by the expiry it was granted, and by what it holds when that is stale', async () => {
      const x = await held();
      const granted = await t.store.commitTurn(t.scope, {
        ...finalBatch(x),
        release_lease: { name: x.name, owner: 'runner-a', expires_at: x.expires_at },
      });
      expect(granted.lease_released).toBe(true);
      expect(await takenBy(x.name, 'runner-b')).toBe(true);
      // renewed since: the expiry the batch names is no longer the lease's, yet its owner frees it
      const y = await held();
      const stale = new Date(Date.parse(y.expires_at) - 5_000).toISOString();
      expect(await t.store.acquireLease(t.scope, y.name, 'runner-a', 90_000)).not.toBeNull();
      const renewed = await t.store.commitTurn(t.scope, {
        ...finalBatch(y),
        release_lease: { name: y.name, owner: 'runner-a', expires_at: stale },
      });
      expect(renewed.lease_released).toBe(true);
      expect(await takenBy(y.name, 'runner-b')).toBe(true);
      // another owner's lease is never freed by an expiry the batch names
      const z = await held('runner-b');
      const foreign = await t.store.commitTurn(t.scope, {
        ...finalBatch(z),
        release_lease: { name: z.name, owner: 'runner-a', expires_at: z.expires_at },
      });
      expect(foreign.lease_released).toBe(false);
      expect(await takenBy(z.name, 'runner-c')).toBe(false);
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
        { name: x.name, owner: 'runner-a', expires_at: 'tomorrow' },
        { name: x.name, owner: 'runner-a', expires_at: 1_900_000_000_000 },
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
