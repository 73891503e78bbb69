/**
 * Forks and rewinds. Rules: a fork shows the original's first `at_seq` messages, then only its own, and the
 * original never sees the fork's; a fork of a fork shows its whole line; a rewound session continues after
 * the point while a `paused` branch keeps what came after; either side expiring, being swept or deleted
 * leaves the other's history readable; tasks are copied as they stood at the point (before the message
 * after it was written), and a point with an action in flight or a task executing is refused.
 */
import { describe, expect, it } from 'vitest';
import type { Session } from '../../core/model.js';
import { runIdFor } from '../../core/run-id.js';
import type { Scope, StateStore } from '../../store/types.js';
import type { Ctx } from './context.js';
import { expectError, expectInvalid } from './expect.js';
import { action, ids, session, task } from './fixtures.js';

async function say(store: StateStore, scope: Scope, id: string, ...texts: string[]): Promise<void> {
  await store.appendMessages(
    scope,
    id,
    texts.map((content) => ({ role: 'user', content })),
  );
}

async function contents(store: StateStore, scope: Scope, id: string): Promise<string[]> {
  return (await store.listMessages(scope, id, { limit: 1000 })).map((m) => `${m.seq}:${m.content}`);
}

async function withHistory(t: Ctx, n: number, ttl = 600): Promise<Session> {
  const s = await session(t.store, t.scope, ttl);
  await say(t.store, t.scope, s.id, ...Array.from({ length: n }, (_, i) => `m${i + 1}`));
  return s;
}

export function branchTests(t: Ctx): void {
  describe('branches', () => {
    it('a fork shows the prefix, then only its own messages; the original never sees them', async () => {
      const a = await withHistory(t, 5);
      const f = await t.store.forkSession(t.scope, a.id, { at_seq: 3 });
      expect(f.id).not.toBe(a.id);
      expect(f.version).toBe(1);
      expect(f.forked_from).toEqual({ session_id: a.id, seq: 3, checkpoint_id: null });
      expect(await contents(t.store, t.scope, f.id)).toEqual(['1:m1', '2:m2', '3:m3']);
      await say(t.store, t.scope, f.id, 'f4', 'f5');
      await say(t.store, t.scope, a.id, 'm6');
      expect(await contents(t.store, t.scope, f.id)).toEqual(['1:m1', '2:m2', '3:m3', '4:f4', '5:f5']);
      expect(await contents(t.store, t.scope, a.id)).toEqual([
        '1:m1',
        '2:m2',
        '3:m3',
        '4:m4',
        '5:m5',
        '6:m6',
      ]);
      expect((await t.store.lastMessages(t.scope, f.id, 3)).map((m) => m.content)).toEqual([
        'm3',
        'f4',
        'f5',
      ]);
      expect(
        (await t.store.listMessages(t.scope, f.id, { after_seq: 2, limit: 2 })).map((m) => m.seq),
      ).toEqual([3, 4]);
      const head = await t.store.getSessionHead(t.scope, f.id, { next_run: true });
      expect(head?.last_message?.content).toBe('f5');
      expect(head?.last_message?.seq).toBe(5);
      t.clock.advance(1);
      const empty = await t.store.forkSession(t.scope, a.id, { at_seq: 0 });
      expect(await t.store.listMessages(t.scope, empty.id)).toEqual([]);
      expect((await t.store.getSessionHead(t.scope, empty.id))?.last_message).toBeNull();
      expect(ids((await t.store.listBranches(t.scope, a.id)).items)).toEqual([f.id, empty.id]);
    });

    it('a fork of a fork reads its whole line, and appends continue its numbering', async () => {
      const a = await withHistory(t, 4);
      const f = await t.store.forkSession(t.scope, a.id, { at_seq: 2 });
      await say(t.store, t.scope, f.id, 'f3', 'f4');
      const g = await t.store.forkSession(t.scope, f.id, { at_seq: 3 });
      const [added] = await t.store.appendMessages(t.scope, g.id, [{ role: 'user', content: 'g4' }]);
      expect(added?.seq).toBe(4);
      expect(await contents(t.store, t.scope, g.id)).toEqual(['1:m1', '2:m2', '3:f3', '4:g4']);
      expect(await contents(t.store, t.scope, f.id)).toEqual(['1:m1', '2:m2', '3:f3', '4:f4']);
    });

    it('a rewind continues after the point; what came after stays readable as a paused branch', async () => {
      const s = await withHistory(t, 6);
      const { session: rewound, branch } = await t.store.rewindSession(t.scope, s.id, { at_seq: 2 });
      expect(rewound.id).toBe(s.id);
      expect(rewound.version).toBe(s.version + 1);
      expect(branch.status).toBe('paused');
      expect(branch.forked_from).toEqual({ session_id: s.id, seq: 6, checkpoint_id: null });
      expect(await contents(t.store, t.scope, s.id)).toEqual(['1:m1', '2:m2']);
      await say(t.store, t.scope, s.id, 'n3');
      expect(await contents(t.store, t.scope, s.id)).toEqual(['1:m1', '2:m2', '3:n3']);
      expect((await contents(t.store, t.scope, branch.id)).length).toBe(6);
      expect((await contents(t.store, t.scope, branch.id))[5]).toBe('6:m6');
      expect(ids((await t.store.listBranches(t.scope, s.id)).items)).toEqual([branch.id]);
      // A second rewind keeps both earlier lines.
      const again = await t.store.rewindSession(t.scope, s.id, {
        at_seq: 1,
        expected_version: rewound.version,
      });
      expect(await contents(t.store, t.scope, again.branch.id)).toEqual(['1:m1', '2:m2', '3:n3']);
      expect(await contents(t.store, t.scope, s.id)).toEqual(['1:m1']);
      await expectError(
        t.store,
        t.store.rewindSession(t.scope, s.id, { at_seq: 0, expected_version: 1 }),
        'version_conflict',
      );
    });

    it('the original expiring, swept or deleted leaves the fork its history; and the other way round', async () => {
      const a = await withHistory(t, 3, 60);
      const f = await t.store.forkSession(t.scope, a.id, { at_seq: 2, ttl_seconds: 3600 });
      t.clock.advance(61_000);
      expect(await t.store.getSession(t.scope, a.id)).toBeNull();
      expect(ids((await t.store.listSessions(t.scope)).items)).toEqual([f.id]);
      await t.store.sweepExpired(1000);
      expect(await contents(t.store, t.scope, f.id)).toEqual(['1:m1', '2:m2']);
      expect(await t.store.listMessages(t.scope, a.id)).toEqual([]);

      const b = await withHistory(t, 3, 3600);
      const g = await t.store.forkSession(t.scope, b.id, { at_seq: 3, ttl_seconds: 3600 });
      expect(await t.store.deleteSession(t.scope, b.id)).toBe(true);
      expect(await t.store.getSession(t.scope, b.id)).toBeNull();
      expect(await t.store.deleteSession(t.scope, b.id)).toBe(false);
      await t.store.sweepExpired(1000);
      expect(await contents(t.store, t.scope, g.id)).toEqual(['1:m1', '2:m2', '3:m3']);

      const c = await withHistory(t, 2, 3600);
      const h = await t.store.forkSession(t.scope, c.id, { at_seq: 2, ttl_seconds: 60 });
      t.clock.advance(61_000);
      await t.store.sweepExpired(1000);
      expect(await t.store.getSession(t.scope, h.id)).toBeNull();
      expect(await contents(t.store, t.scope, c.id)).toEqual(['1:m1', '2:m2']);
    });

    it('a fork that keeps being used keeps its history past its original', async () => {
      const a = await withHistory(t, 2, 60);
      const f = await t.store.forkSession(t.scope, a.id, { at_seq: 2, ttl_seconds: 60 });
      for (let i = 0; i < 6; i++) {
        t.clock.advance(50_000);
        await say(t.store, t.scope, f.id, `f${i}`);
        await t.store.sweepExpired(1000);
      }
      expect((await contents(t.store, t.scope, f.id)).slice(0, 2)).toEqual(['1:m1', '2:m2']);
    });

    it('concurrent forks of one session all land, each with its own line', async () => {
      const a = await withHistory(t, 3);
      const forks = await Promise.all(
        Array.from({ length: 5 }, () => t.store.forkSession(t.scope, a.id, { at_seq: 2 })),
      );
      expect(new Set(ids(forks)).size).toBe(5);
      await Promise.all(forks.map((f, i) => say(t.store, t.scope, f.id, `own${i}`)));
      for (const [i, f] of forks.entries())
        expect(await contents(t.store, t.scope, f.id)).toEqual(['1:m1', '2:m2', `3:own${i}`]);
      expect(new Set(ids((await t.store.listBranches(t.scope, a.id)).items))).toEqual(new Set(ids(forks)));
      const first = await t.store.listBranches(t.scope, a.id, { limit: 3 });
      expect(first.items).toHaveLength(3);
      const rest = await t.store.listBranches(t.scope, a.id, { limit: 3, cursor: first.next_cursor });
      expect(rest.next_cursor).toBeNull();
      expect(new Set(ids([...first.items, ...rest.items]))).toEqual(new Set(ids(forks)));
    });

    it('tasks are copied as they stood at the point, with the actions done by then and after it', async () => {
      const s = await session(t.store, t.scope);
      await say(t.store, t.scope, s.id, 'book ZRH-BER');
      const tk = await t.store.createTask(t.scope, { type: 'flight', session_id: s.id, state: 'COLLECTING' });
      t.clock.advance(10);
      const confirming = await t.store.updateTask(t.scope, tk.id, 1, { state: 'CONFIRMING', cause: 'slots' });
      t.clock.advance(10);
      await say(t.store, t.scope, s.id, 'yes');
      t.clock.advance(10);
      const executing = await t.store.updateTask(t.scope, tk.id, confirming.version, {
        state: 'EXECUTING',
        cause: 'yes',
      });
      const booked = await action(t.store, t.scope, tk.id);
      await t.store.completeAction(t.scope, booked.id, { status: 'SUCCESS', result: { ref: 'PNR1' } });
      await t.store.updateTask(t.scope, tk.id, executing.version, { state: 'DONE', cause: 'booked' });
      t.clock.advance(10);
      await say(t.store, t.scope, s.id, 'thanks');

      const before = await t.store.forkSession(t.scope, s.id, { at_seq: 1 });
      const [copy] = (await t.store.listTasks(t.scope, { session_id: before.id })).items;
      expect(copy?.id).not.toBe(tk.id);
      expect(copy?.state).toBe('CONFIRMING');
      expect(copy?.data['agentstate.fork']).toEqual({
        task_id: tk.id,
        version: confirming.version,
        actions_done: [],
        actions_after: [booked.id],
      });
      const after = await t.store.forkSession(t.scope, s.id, { at_seq: 3 });
      const [done] = (await t.store.listTasks(t.scope, { session_id: after.id })).items;
      expect(done?.state).toBe('DONE');
      expect(done?.data['agentstate.fork']).toMatchObject({ actions_done: [booked.id], actions_after: [] });
      expect((await t.store.listTasks(t.scope, { session_id: s.id })).items.map((x) => x.id)).toEqual([
        tk.id,
      ]);
    });

    it('a task is copied with the slots it had at the point, not those given after it', async () => {
      const s = await session(t.store, t.scope);
      await say(t.store, t.scope, s.id, 'book a flight');
      const tk = await t.store.createTask(t.scope, { type: 'flight', session_id: s.id, state: 'COLLECTING' });
      t.clock.advance(10);
      const v2 = await t.store.updateTask(t.scope, tk.id, 1, { slots: { from: 'ZRH' }, status_line: 'to?' });
      await say(t.store, t.scope, s.id, 'from Zurich', 'where to?');
      t.clock.advance(10);
      await say(t.store, t.scope, s.id, 'to Berlin');
      await t.store.updateTask(t.scope, tk.id, v2.version, {
        slots: { from: 'ZRH', to: 'BER' },
        status_line: 'when?',
      });
      const f = await t.store.forkSession(t.scope, s.id, { at_seq: 3 });
      const [copy] = (await t.store.listTasks(t.scope, { session_id: f.id })).items;
      expect(copy?.slots).toEqual({ from: 'ZRH' });
      expect(copy?.status_line).toBe('to?');
      expect(copy?.state).toBe('COLLECTING');
      // Versions that changed no state are kept for forks, not shown as events.
      expect((await t.store.listTaskEvents(t.scope, tk.id)).map((e) => e.to_state)).toEqual(['COLLECTING']);
    });

    it('a point with an action in flight or a task executing is refused, and nothing is stored', async () => {
      const s = await session(t.store, t.scope);
      await say(t.store, t.scope, s.id, 'go');
      const tk = await task(t.store, t.scope, s.id);
      t.clock.advance(10);
      const pending = await action(t.store, t.scope, tk.id);
      t.clock.advance(10);
      await say(t.store, t.scope, s.id, 'still there?');
      await expectInvalid(t.store, t.store.forkSession(t.scope, s.id, { at_seq: 2 }), pending.id, 'PENDING');
      await expectInvalid(t.store, t.store.forkSession(t.scope, s.id, { at_seq: 1 }), pending.id);
      await t.store.markActionUnknown(t.scope, pending.id, 'timeout');
      await expectInvalid(t.store, t.store.rewindSession(t.scope, s.id, { at_seq: 1 }), 'UNKNOWN');
      expect((await t.store.listBranches(t.scope, s.id)).items).toEqual([]);
      expect((await t.store.getSession(t.scope, s.id))?.version).toBe(s.version);
      const early = await t.store.forkSession(t.scope, s.id, { at_seq: 0 });
      expect((await t.store.listTasks(t.scope, { session_id: early.id })).items).toEqual([]);
    });

    it('a fork at a checkpoint sees the messages written before it', async () => {
      const s = await withHistory(t, 2);
      t.clock.advance(10);
      const cp = await t.store.putCheckpoint(t.scope, {
        run_id: 'run-1',
        session_id: s.id,
        step: 1,
        label: 'step',
        channels: {},
      });
      t.clock.advance(10);
      await say(t.store, t.scope, s.id, 'm3');
      const f = await t.store.forkSession(t.scope, s.id, { checkpoint_id: cp.id });
      expect(f.forked_from).toEqual({ session_id: s.id, seq: 2, checkpoint_id: cp.id });
      expect(await contents(t.store, t.scope, f.id)).toEqual(['1:m1', '2:m2']);
      // A checkpoint of a turn's run (runIdFor the seq it started at) counts exactly the messages before
      // the run, even with a message written in the same millisecond after it.
      const mid = await t.store.putCheckpoint(t.scope, {
        run_id: runIdFor(s.id, 3),
        session_id: s.id,
        step: 1,
        label: 'step',
        channels: {},
      });
      await say(t.store, t.scope, s.id, 'm4');
      const g = await t.store.forkSession(t.scope, s.id, { checkpoint_id: mid.id });
      expect(g.forked_from?.seq).toBe(3);
    });

    it('bad input and other owners change nothing', async () => {
      const s = await withHistory(t, 2);
      await expectInvalid(t.store, t.store.forkSession(t.scope, s.id, { at_seq: 3 }), 'at_seq');
      await expectInvalid(t.store, t.store.forkSession(t.scope, s.id, {}), 'exactly one');
      await expectInvalid(t.store, t.store.forkSession(t.scope, s.id, { at_seq: -1 }), 'at_seq');
      await expectInvalid(
        t.store,
        t.store.forkSession(t.scope, s.id, { at_seq: 1, extra: 1 } as never),
        'extra',
      );
      await expectInvalid(t.store, t.store.rewindSession(t.scope, s.id, { at_seq: 2 }), 'at_seq');
      await expectError(t.store, t.store.forkSession(t.neighbour, s.id, { at_seq: 1 }), 'not_found', s.id);
      await expectError(t.store, t.store.rewindSession(t.neighbour, s.id, { at_seq: 1 }), 'not_found', s.id);
      await expectError(t.store, t.store.listBranches(t.stranger, s.id), 'not_found', s.id);
      expect((await t.store.listBranches(t.scope, s.id)).items).toEqual([]);
      expect(ids((await t.store.listSessions(t.scope)).items)).toEqual([s.id]);
    });
  });
}
