/**
 * Messages. Rules: seq starts at 1 per session and has no gaps, also under concurrent appends; one append's
 * messages get consecutive seqs; appending renews the session's TTL but not its version; appending to a
 * missing or expired session is `not_found`; reading messages of a missing session gives [].
 */
import { describe, expect, it } from 'vitest';
import { isId, newId } from '../../core/ids.js';
import { OPEN_TASK_STATES } from '../../core/model.js';
import { runIdFor } from '../../core/run-id.js';
import type { NewMessage, ReadScope } from '../../store/types.js';
import type { Ctx } from './context.js';
import { expectError, expectInvalid, ms } from './expect.js';
import { session } from './fixtures.js';

function batch(label: string, n: number): NewMessage[] {
  return Array.from({ length: n }, (_, i) => ({ role: 'user' as const, content: `${label}-${i}` }));
}

export function messageTests(t: Ctx): void {
  describe('messages', () => {
    it('appends with seq from 1 and reads them back in order', async () => {
      const s = await session(t.store, t.scope);
      const added = await t.store.appendMessages(t.scope, s.id, [
        { role: 'system', content: 'You book flights.' },
        { role: 'user', content: 'Zurich to Lisbon', metadata: { lang: 'en' } },
        {
          role: 'assistant',
          content: '',
          tool_calls: [{ id: 'call_1', name: 'search', arguments: { from: 'ZRH', to: 'LIS' } }],
        },
        { role: 'tool', content: '{"flights":2}', tool_call_id: 'call_1', name: 'search' },
      ]);
      expect(added.map((m) => m.seq)).toEqual([1, 2, 3, 4]);
      for (const m of added) {
        expect(isId(m.id, 'message')).toBe(true);
        expect(m).toMatchObject({ session_id: s.id, tenant_id: t.scope.tenant_id, user_id: t.scope.user_id });
      }
      expect(added[1]?.metadata).toEqual({ lang: 'en' });
      expect(added[0]).toMatchObject({ name: null, tool_calls: null, tool_call_id: null, metadata: {} });
      expect(added[2]?.tool_calls).toEqual([
        { id: 'call_1', name: 'search', arguments: { from: 'ZRH', to: 'LIS' } },
      ]);
      expect(added[3]).toMatchObject({ tool_call_id: 'call_1', name: 'search' });
      expect(await t.store.listMessages(t.scope, s.id)).toEqual(added);
    });

    it('keeps seq gap-free across many appends', async () => {
      const s = await session(t.store, t.scope);
      for (let i = 0; i < 12; i++) await t.store.appendMessages(t.scope, s.id, batch(`a${i}`, (i % 3) + 1));
      const all = await t.store.listMessages(t.scope, s.id, { limit: 1000 });
      expect(all.map((m) => m.seq)).toEqual(Array.from({ length: 24 }, (_, i) => i + 1));
    });

    it('10 concurrent appends of 5 messages each get seqs 1..50, each append contiguous', async () => {
      const s = await session(t.store, t.scope);
      const results = await Promise.all(
        Array.from({ length: 10 }, (_, i) => t.store.appendMessages(t.scope, s.id, batch(`c${i}`, 5))),
      );
      const all = await t.store.listMessages(t.scope, s.id, { limit: 100 });
      expect(all.map((m) => m.seq)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
      for (const [i, added] of results.entries()) {
        const seqs = added.map((m) => m.seq);
        expect(seqs).toEqual(Array.from({ length: 5 }, (_, k) => seqs[0]! + k));
        expect(added.map((m) => m.content)).toEqual(batch(`c${i}`, 5).map((m) => m.content));
      }
    });

    it('sequences are per session', async () => {
      const a = await session(t.store, t.scope);
      const b = await session(t.store, t.scope);
      await t.store.appendMessages(t.scope, a.id, batch('a', 3));
      const inB = await t.store.appendMessages(t.scope, b.id, batch('b', 2));
      expect(inB.map((m) => m.seq)).toEqual([1, 2]);
    });

    it('pages with after_seq and limit; lastMessages gives the tail in ascending order', async () => {
      const s = await session(t.store, t.scope);
      await t.store.appendMessages(t.scope, s.id, batch('m', 10));
      const page = await t.store.listMessages(t.scope, s.id, { after_seq: 3, limit: 4 });
      expect(page.map((m) => m.seq)).toEqual([4, 5, 6, 7]);
      expect((await t.store.listMessages(t.scope, s.id, { after_seq: 10 })).length).toBe(0);
      const tail = await t.store.lastMessages(t.scope, s.id, 3);
      expect(tail.map((m) => m.seq)).toEqual([8, 9, 10]);
      expect((await t.store.lastMessages(t.scope, s.id, 50)).length).toBe(10);
    });

    it("getSessionHead gives the session and its newest message, in the session's scope only", async () => {
      const s = await session(t.store, t.scope, 60);
      expect(await t.store.getSessionHead(t.scope, s.id)).toEqual({ session: s, last_message: null });
      await t.store.appendMessages(t.scope, s.id, batch('h', 3));
      const [newest] = await t.store.lastMessages(t.scope, s.id, 1);
      const head = await t.store.getSessionHead(t.scope, s.id);
      expect(head?.last_message).toEqual(newest);
      expect(head?.last_message?.seq).toBe(3);
      expect(head?.session).toEqual(await t.store.getSession(t.scope, s.id));
      // The tenant sees it; another user of the tenant and another tenant do not; nor once it expired.
      expect((await t.store.getSessionHead(t.tenant, s.id))?.last_message?.seq).toBe(3);
      expect(await t.store.getSessionHead(t.neighbour, s.id)).toBeNull();
      expect(await t.store.getSessionHead(t.stranger, s.id)).toBeNull();
      expect(await t.store.getSessionHead(t.scope, newId('session'))).toBeNull();
      await expectInvalid(t.store, t.store.getSessionHead(t.scope, 'not-an-id'), 'session id');
      t.clock.advance(61_000);
      expect(await t.store.getSessionHead(t.scope, s.id)).toBeNull();
    });

    it("getSessionHead with open_tasks gives the scope's open tasks as listTasks does, and refuses bad options", async () => {
      const s = await session(t.store, t.scope, 600);
      const other = await session(t.store, t.scope, 600);
      const made = [];
      for (const [sessionId, type] of [
        [s.id, 'flight'],
        [other.id, 'hotel'],
        [null, 'car'],
        [s.id, 'train'],
      ] as const) {
        t.clock.advance(1_000);
        made.push(await t.store.createTask(t.scope, { type, session_id: sessionId }));
      }
      const closed = made[3] as (typeof made)[number];
      await t.store.updateTask(t.scope, closed.id, closed.version, { state: 'CANCELLED' });
      await t.store.createTask(t.neighbour, { type: 'boat', session_id: null });
      await t.store.appendMessages(t.scope, s.id, batch('o', 2));
      const listed = async (limit: number) =>
        (await t.store.listTasks(t.scope, { state: OPEN_TASK_STATES, limit })).items;
      const head = await t.store.getSessionHead(t.scope, s.id, { open_tasks: 200 });
      expect(head?.open_tasks).toEqual(await listed(200));
      expect(head?.open_tasks?.map((k) => k.type)).toEqual(['car', 'hotel', 'flight']);
      expect(head?.last_message?.seq).toBe(2);
      expect(head?.session).toEqual(await t.store.getSession(t.scope, s.id));
      expect((await t.store.getSessionHead(t.scope, s.id, { open_tasks: 2 }))?.open_tasks).toEqual(
        await listed(2),
      );
      // Without it, no list; a missing session, no head.
      expect((await t.store.getSessionHead(t.scope, s.id, {}))?.open_tasks).toBeUndefined();
      expect(await t.store.getSessionHead(t.scope, newId('session'), { open_tasks: 5 })).toBeNull();
      for (const bad of [
        { open_tasks: 0 },
        { open_tasks: 501 },
        { open_tasks: 1.5 },
        { open_tasks: '5' },
        { tasks: 5 },
      ]) {
        await expectInvalid(
          t.store,
          t.store.getSessionHead(t.scope, s.id, bad as unknown as { open_tasks: number }),
          'open_tasks',
        );
      }
    });

    it("getSessionHead with next_run gives the session's next run and its newest checkpoint's label, in scope", async () => {
      const s = await session(t.store, t.scope, 600);
      const nextRun = async (scope: ReadScope = t.scope) =>
        (await t.store.getSessionHead(scope, s.id, { next_run: true }))?.next_run;
      expect(await nextRun()).toEqual({ id: runIdFor(s.id, 0), checkpoint_label: null });
      // Only the run's own checkpoints count, the newest by write order; another user's never.
      const run = runIdFor(s.id, 0);
      await t.store.putCheckpoint(t.neighbour, {
        run_id: run,

        step: 0,
        label: 'theirs',
        channels: {},
      });
      expect(await nextRun()).toEqual({ id: run, checkpoint_label: null });
      await t.store.putCheckpoint(t.scope, {
        run_id: runIdFor(s.id, 7),
        step: 0,
        label: 'other run',
        channels: {},
      });
      await t.store.putCheckpoint(t.scope, {
        run_id: run,
        session_id: s.id,
        step: 0,
        label: 'start',
        channels: {},
      });
      expect(await nextRun()).toEqual({ id: run, checkpoint_label: 'start' });
      await t.store.putCheckpoint(t.scope, {
        run_id: run,
        session_id: s.id,
        step: 1,
        label: 'turn',
        channels: {},
      });
      expect(await nextRun()).toEqual({ id: run, checkpoint_label: 'turn' });
      expect(await nextRun(t.neighbour)).toBeUndefined();
      // Each message appended makes a new run id (from the newest seq).
      for (let seq = 1; seq <= 12; seq++) {
        await t.store.appendMessages(t.scope, s.id, batch(`r${seq}`, 1));
        // The checkpoint put above for the run of seq 7 is that run's once the session gets there.
        const label = seq === 7 ? 'other run' : null;
        expect(await nextRun()).toEqual({ id: runIdFor(s.id, seq), checkpoint_label: label });
      }
      await t.store.putCheckpoint(t.scope, {
        run_id: runIdFor(s.id, 12),
        step: 0,
        label: 'before book',
        channels: {},
      });
      // With the open tasks too; without the option, no next run.
      const both = await t.store.getSessionHead(t.scope, s.id, { open_tasks: 5, next_run: true });
      expect(both?.next_run).toEqual({ id: runIdFor(s.id, 12), checkpoint_label: 'before book' });
      expect(both?.open_tasks).toEqual([]);
      expect(both?.last_message?.seq).toBe(12);
      expect((await t.store.getSessionHead(t.scope, s.id))?.next_run).toBeUndefined();
      expect((await t.store.getSessionHead(t.scope, s.id, { next_run: false }))?.next_run).toBeUndefined();
      expect(await t.store.getSessionHead(t.scope, newId('session'), { next_run: true })).toBeNull();
      for (const bad of [{ next_run: 'yes' }, { next_run: 1 }, { next_run: null }]) {
        await expectInvalid(
          t.store,
          t.store.getSessionHead(t.scope, s.id, bad as unknown as { next_run: boolean }),
          'next_run',
        );
      }
    });

    it('appending renews the TTL but not the version', async () => {
      const s = await session(t.store, t.scope, 60);
      t.clock.advance(50_000);
      await t.store.appendMessages(t.scope, s.id, batch('x', 1));
      const read = await t.store.getSession(t.scope, s.id);
      expect(read?.version).toBe(1);
      expect(ms(read?.expires_at ?? '')).toBe(t.clock.now() + 60_000);
      t.clock.advance(50_000);
      expect(await t.store.getSession(t.scope, s.id)).not.toBeNull();
    });

    it('appending to a missing session is not_found; reading one gives []', async () => {
      const id = newId('session');
      await expectError(t.store, t.store.appendMessages(t.scope, id, batch('x', 1)), 'not_found', id);
      expect(await t.store.listMessages(t.scope, id)).toEqual([]);
      expect(await t.store.lastMessages(t.scope, id, 5)).toEqual([]);
    });

    it('refuses bad messages and appends none of the batch', async () => {
      const s = await session(t.store, t.scope);
      const st = t.store;
      const bad: NewMessage[][] = [
        [
          { role: 'user', content: 'ok' },
          { role: 'robot' as never, content: 'x' },
        ],
        [
          { role: 'user', content: 'ok' },
          { role: 'user', content: 42 as never },
        ],
        [
          { role: 'user', content: 'ok' },
          { role: 'user', content: 'x', metadata: [] as never },
        ],
        [
          { role: 'user', content: 'ok' },
          { role: 'user', content: 'bad \ud800 text' },
        ],
        [
          {
            role: 'assistant',
            content: '',
            tool_calls: [{ id: 'c', name: 'f', arguments: { at: new Date() } as never }],
          },
        ],
      ];
      for (const messages of bad) await expectInvalid(st, st.appendMessages(t.scope, s.id, messages));
      expect(await st.listMessages(t.scope, s.id)).toEqual([]);
      const next = await st.appendMessages(t.scope, s.id, batch('ok', 1));
      expect(next[0]?.seq).toBe(1);
    });

    it('refuses a field a message or a tool call does not have, naming it, and stores nothing', async () => {
      const s = await session(t.store, t.scope);
      const st = t.store;
      await expectInvalid(
        st,
        st.appendMessages(t.scope, s.id, [
          { role: 'user', content: 'ok' },
          {
            role: 'assistant',
            content: '',
            tool_calls: [{ id: 'c1', name: 'f', arguments: {}, type: 'function' } as never],
          },
        ]),
        'messages[1].tool_calls[0].type is not a field',
      );
      await expectInvalid(
        st,
        st.appendMessages(t.scope, s.id, [{ role: 'user', content: 'x', tool_call_ids: 'c1' } as never]),
        'messages[0].tool_call_ids is not a field',
      );
      expect(await st.listMessages(t.scope, s.id)).toEqual([]);
    });

    it('refuses bad queries', async () => {
      const s = await session(t.store, t.scope);
      const st = t.store;
      await expectInvalid(st, st.listMessages(t.scope, s.id, { limit: 0 }), 'limit');
      await expectInvalid(st, st.listMessages(t.scope, s.id, { limit: 1001 }), 'limit');
      await expectInvalid(st, st.listMessages(t.scope, s.id, { after_seq: -1 }), 'after_seq');
      await expectInvalid(st, st.listMessages(t.scope, s.id, { after_seq: 1.5 }), 'after_seq');
      await expectInvalid(st, st.lastMessages(t.scope, s.id, 0));
      await expectInvalid(st, st.listMessages(t.scope, 'sess_bad', {}));
      await expectInvalid(st, st.appendMessages(t.scope, newId('task'), batch('x', 1)));
    });

    it('an empty append adds nothing and returns []', async () => {
      const s = await session(t.store, t.scope);
      expect(await t.store.appendMessages(t.scope, s.id, [])).toEqual([]);
      const added = await t.store.appendMessages(t.scope, s.id, batch('x', 1));
      expect(added[0]?.seq).toBe(1);
    });
  });
}
