/**
 * Tasks and versions. Rules: version starts at 1; every update bumps it; a stale version is
 * `version_conflict` naming the task; a state change outside TASK_TRANSITIONS is `invalid_request` naming
 * both states; every state change writes a TaskEvent (create writes one with from_state null and cause
 * 'created'); closed_at is set on entering DONE or CANCELLED; updating a missing task is `not_found`.
 */
import { describe, expect, it } from 'vitest';
import { isId, newId } from '../../core/ids.js';
import { OPEN_TASK_STATES, TASK_STATES, TASK_TRANSITIONS, type TaskState } from '../../core/model.js';
import type { Ctx } from './context.js';
import { expectError, expectInvalid } from './expect.js';
import { collect, ids, session, task } from './fixtures.js';

/** A path through the state machine from INIT to `target`. */
const PATHS: Record<TaskState, TaskState[]> = {
  INIT: [],
  COLLECTING: ['COLLECTING'],
  CONFIRMING: ['COLLECTING', 'CONFIRMING'],
  EXECUTING: ['COLLECTING', 'CONFIRMING', 'EXECUTING'],
  DONE: ['COLLECTING', 'CONFIRMING', 'EXECUTING', 'DONE'],
  FAILED: ['COLLECTING', 'FAILED'],
  CANCELLED: ['CANCELLED'],
};

export function taskTests(t: Ctx): void {
  async function taskIn(state: TaskState) {
    let current = await task(t.store, t.scope);
    for (const next of PATHS[state]) {
      current = await t.store.updateTask(t.scope, current.id, current.version, { state: next });
    }
    return current;
  }

  describe('tasks and versions', () => {
    it('creates a task with defaults, version 1 and a created event', async () => {
      const s = await session(t.store, t.scope);
      const created = await t.store.createTask(t.scope, { type: 'flight', session_id: s.id });
      expect(isId(created.id, 'task')).toBe(true);
      expect(created).toMatchObject({
        tenant_id: t.scope.tenant_id,
        user_id: t.scope.user_id,
        session_id: s.id,
        type: 'flight',
        state: 'INIT',
        slots: {},
        data: {},
        status_line: '',
        version: 1,
        closed_at: null,
      });
      expect(await t.store.getTask(t.scope, created.id)).toEqual(created);
      const events = await t.store.listTaskEvents(t.scope, created.id);
      expect(events).toHaveLength(1);
      expect(events[0]).toMatchObject({
        task_id: created.id,
        from_state: null,
        to_state: 'INIT',
        cause: 'created',
      });
      expect(events[0]?.task_version).toBe(1);
      expect(isId(events[0]?.id ?? '', 'event')).toBe(true);
    });

    it('keeps caller id, slots, data and status line; a task may start in another state', async () => {
      const id = newId('task');
      const created = await t.store.createTask(t.scope, {
        id,
        type: 'deploy',
        state: 'COLLECTING',
        slots: { env: 'prod', files: ['a.ts', 'b.ts'] },
        data: { counter: 0 },
        status_line: 'collecting env',
      });
      expect(created).toMatchObject({
        id,
        state: 'COLLECTING',
        session_id: null,
        status_line: 'collecting env',
      });
      expect(created.slots).toEqual({ env: 'prod', files: ['a.ts', 'b.ts'] });
      const events = await t.store.listTaskEvents(t.scope, id);
      expect(events.map((e) => [e.from_state, e.to_state, e.cause])).toEqual([
        [null, 'COLLECTING', 'created'],
      ]);
      await expectError(t.store, t.store.createTask(t.scope, { id, type: 'again' }), 'conflict', id);
    });

    it('walks the whole happy path, one event per state change, closed_at at DONE', async () => {
      const created = await task(t.store, t.scope);
      let current = created;
      for (const next of PATHS.DONE) {
        t.clock.advance(1000);
        current = await t.store.updateTask(t.scope, current.id, current.version, {
          state: next,
          cause: `to ${next}`,
        });
        expect(current.state).toBe(next);
      }
      expect(current.version).toBe(5);
      expect(current.closed_at).toBe(new Date(t.clock.now()).toISOString());
      const events = await t.store.listTaskEvents(t.scope, created.id);
      expect(events.map((e) => [e.from_state, e.to_state, e.task_version])).toEqual([
        [null, 'INIT', 1],
        ['INIT', 'COLLECTING', 2],
        ['COLLECTING', 'CONFIRMING', 3],
        ['CONFIRMING', 'EXECUTING', 4],
        ['EXECUTING', 'DONE', 5],
      ]);
      expect(events[4]?.cause).toBe('to DONE');
      expect(events.map((e) => Date.parse(e.at))).toEqual([...events.map((e) => Date.parse(e.at))].sort());
    });

    for (const from of TASK_STATES) {
      it(`from ${from}: allows exactly the transitions of TASK_TRANSITIONS`, async () => {
        for (const to of TASK_STATES) {
          if (to === from) continue;
          const current = await taskIn(from);
          const work = t.store.updateTask(t.scope, current.id, current.version, { state: to });
          if (TASK_TRANSITIONS[from].includes(to)) {
            expect((await work).state).toBe(to);
          } else {
            await expectInvalid(t.store, work, current.id, `cannot go from ${from} to ${to}`);
            expect(await t.store.getTask(t.scope, current.id)).toEqual(current);
          }
        }
      });
    }

    it('an update without a state change bumps the version and writes no event', async () => {
      const created = await task(t.store, t.scope);
      const updated = await t.store.updateTask(t.scope, created.id, 1, {
        slots: { from: 'ZRH', to: 'LIS' },
        status_line: 'to Lisbon',
        data: { tries: 1 },
      });
      expect(updated).toMatchObject({ version: 2, state: 'INIT', status_line: 'to Lisbon' });
      expect(updated.slots).toEqual({ from: 'ZRH', to: 'LIS' });
      expect(updated.data).toEqual({ tries: 1 });
      const same = await t.store.updateTask(t.scope, created.id, 2, { state: 'INIT' });
      expect(same.version).toBe(3);
      expect(await t.store.listTaskEvents(t.scope, created.id)).toHaveLength(1);
    });

    it('a task can move to another session; the default cause of a state change is update', async () => {
      const first = await session(t.store, t.scope);
      const second = await session(t.store, t.scope);
      const created = await task(t.store, t.scope, first.id);
      const moved = await t.store.updateTask(t.scope, created.id, 1, {
        session_id: second.id,
        state: 'COLLECTING',
      });
      expect(moved.session_id).toBe(second.id);
      expect((await t.store.listTasks(t.scope, { session_id: first.id })).items).toEqual([]);
      expect(ids((await t.store.listTasks(t.scope, { session_id: second.id })).items)).toEqual([created.id]);
      const events = await t.store.listTaskEvents(t.scope, created.id);
      expect(events.at(-1)).toMatchObject({ from_state: 'INIT', to_state: 'COLLECTING', cause: 'update' });
      const detached = await t.store.updateTask(t.scope, created.id, 2, { session_id: null });
      expect(detached.session_id).toBeNull();
      expect((await t.store.getTask(t.scope, created.id))?.session_id).toBeNull();
    });

    it('slots are replaced as a whole', async () => {
      const created = await t.store.createTask(t.scope, { type: 'x', slots: { a: 1, b: 2 } });
      const updated = await t.store.updateTask(t.scope, created.id, 1, { slots: { c: 3 } });
      expect(updated.slots).toEqual({ c: 3 });
    });

    it('a stale version is version_conflict naming the task and changes nothing', async () => {
      const created = await task(t.store, t.scope);
      const v2 = await t.store.updateTask(t.scope, created.id, 1, { state: 'COLLECTING' });
      const error = await expectError(
        t.store,
        t.store.updateTask(t.scope, created.id, 1, { state: 'CANCELLED', slots: {} }),
        'version_conflict',
        created.id,
      );
      expect(error.details).toMatchObject({ expected_version: 1, current_version: 2 });
      expect(await t.store.getTask(t.scope, created.id)).toEqual(v2);
      expect(await t.store.listTaskEvents(t.scope, created.id)).toHaveLength(2);
    });

    it('updating a missing task is not_found', async () => {
      const id = newId('task');
      await expectError(t.store, t.store.updateTask(t.scope, id, 1, { status_line: 'x' }), 'not_found', id);
      expect(await t.store.getTask(t.scope, id)).toBeNull();
      expect(await t.store.listTaskEvents(t.scope, id)).toEqual([]);
    });

    it('FAILED -> COLLECTING reopens a task and clears closed_at; CANCELLED is final', async () => {
      const failed = await taskIn('FAILED');
      expect(failed.closed_at).toBeNull();
      const retried = await t.store.updateTask(t.scope, failed.id, failed.version, { state: 'COLLECTING' });
      expect(retried.state).toBe('COLLECTING');
      const cancelled = await t.store.updateTask(t.scope, failed.id, retried.version, { state: 'CANCELLED' });
      expect(cancelled.closed_at).not.toBeNull();
    });

    it('lists newest first with filters by session, state (one or several) and type', async () => {
      const s = await session(t.store, t.scope);
      const a = await t.store.createTask(t.scope, { type: 'flight', session_id: s.id });
      t.clock.advance(1000);
      const b = await t.store.createTask(t.scope, { type: 'hotel', session_id: s.id, state: 'COLLECTING' });
      t.clock.advance(1000);
      const c = await t.store.createTask(t.scope, { type: 'flight', state: 'COLLECTING' });
      expect(ids((await t.store.listTasks(t.scope)).items)).toEqual([c.id, b.id, a.id]);
      expect(ids((await t.store.listTasks(t.scope, { session_id: s.id })).items)).toEqual([b.id, a.id]);
      expect(ids((await t.store.listTasks(t.scope, { state: 'COLLECTING' })).items)).toEqual([c.id, b.id]);
      expect(ids((await t.store.listTasks(t.scope, { state: ['INIT', 'DONE'] })).items)).toEqual([a.id]);
      expect(ids((await t.store.listTasks(t.scope, { type: 'flight' })).items)).toEqual([c.id, a.id]);
      expect(ids((await t.store.listTasks(t.scope, { type: 'flight', state: 'INIT' })).items)).toEqual([
        a.id,
      ]);
    });

    it("finds a session's open tasks past a long history of finished ones, in any order of the states", async () => {
      const s = await session(t.store, t.scope);
      const other = await session(t.store, t.scope);
      const open: string[] = [];
      for (let i = 0; i < 24; i++) {
        t.clock.advance(10);
        const here = i % 3 === 0 ? other.id : s.id;
        const state: TaskState =
          i % 8 === 5 ? 'COLLECTING' : i % 8 === 7 ? 'FAILED' : i % 2 ? 'DONE' : 'CANCELLED';
        const made = await t.store.createTask(t.scope, { type: 'flight', session_id: here, state });
        if (here === s.id && OPEN_TASK_STATES.includes(state)) open.unshift(made.id);
      }
      expect(open.length).toBeGreaterThan(2);
      for (const states of [[...OPEN_TASK_STATES], [...OPEN_TASK_STATES].reverse()]) {
        const listed = await t.store.listTasks(t.scope, { session_id: s.id, state: states });
        expect(ids(listed.items)).toEqual(open);
        const { items } = await collect(
          (q) => t.store.listTasks(t.scope, { ...q, session_id: s.id, state: states }),
          2,
        );
        expect(ids(items)).toEqual(open);
      }
      const done = await t.store.listTasks(t.scope, { session_id: s.id, state: 'DONE' });
      expect(done.items.length).toBeGreaterThan(0);
      expect(done.items.every((task) => task.state === 'DONE' && task.session_id === s.id)).toBe(true);
    });

    it('pages through tasks: every task exactly once', async () => {
      const made = [];
      for (let i = 0; i < 9; i++) made.push(await task(t.store, t.scope));
      const { items, pages } = await collect((q) => t.store.listTasks(t.scope, q), 4);
      expect(pages).toBe(3);
      expect(ids(items).sort()).toEqual(ids(made).sort());
    });

    it('refuses bad input and stores nothing', async () => {
      const s = t.store;
      await expectInvalid(s, s.createTask(t.scope, { type: '' }), 'type');
      await expectInvalid(s, s.createTask(t.scope, { type: 'x', state: 'WAITING' as never }), 'state');
      await expectInvalid(s, s.createTask(t.scope, { type: 'x', id: newId('session') }), 'id');
      await expectInvalid(s, s.createTask(t.scope, { type: 'x', session_id: 'sess_nope' }), 'session_id');
      await expectInvalid(s, s.createTask(t.scope, { type: 'x', slots: 'a' as never }), 'task.slots');
      await expectInvalid(s, s.createTask(t.scope, { type: 'x', status_line: 3 as never }), 'status_line');
      expect((await s.listTasks(t.scope)).items).toEqual([]);
      const created = await task(s, t.scope);
      await expectInvalid(s, s.updateTask(t.scope, created.id, 1, { state: 'NOPE' as never }), 'state');
      await expectInvalid(s, s.updateTask(t.scope, created.id, 1, { data: [] as never }), 'task.data');
      await expectInvalid(s, s.updateTask(t.scope, created.id, 0.5, {}), 'expected_version');
      await expectInvalid(s, s.updateTask(t.scope, 'task_x', 1, {}));
      await expectInvalid(s, s.getTask(t.scope, newId('action')));
      await expectInvalid(s, s.listTasks(t.scope, { state: 'NOPE' as never }), 'state');
      await expectInvalid(s, s.listTasks(t.scope, { session_id: 'x' }), 'session_id');
      expect(await s.getTask(t.scope, created.id)).toEqual(created);
    });
  });
}
