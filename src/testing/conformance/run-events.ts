/**
 * Run events. Rules: a run's events are listed oldest first with ids that order them (opaque strings);
 * `after` lists what follows an id; a turn's commit writes its events in the same commit (its `items`,
 * then one per record written in the batch's order, then `final` built from what it wrote), and a commit
 * that fails writes none; events are scoped like the session they belong to (another user sees none, the
 * tenant sees them, an expired session's are gone from reads); a run's log stays for the TTL after its
 * newest event (default one hour) and is then swept.
 */
import { describe, expect, it } from 'vitest';
import type { RunEvent } from '../../core/model.js';
import type { Ctx } from './context.js';
import { expectError, expectInvalid } from './expect.js';
import { session, uniqueKey } from './fixtures.js';
import { turnFixtures } from './turn-fixtures.js';

const types = (events: readonly RunEvent[]) => events.map((event) => event.type);

export function runEventTests(t: Ctx): void {
  describe('run events', () => {
    const { setup, fullBatch } = turnFixtures(t);

    it('lists a run’s events oldest first, after an id, at most a limit', async () => {
      const s = await session(t.store, t.scope);
      const run = uniqueKey('run');
      await t.store.appendRunEvents(t.scope, {
        session_id: s.id,
        run_id: run,
        events: [{ type: 'run.started', data: { run_id: run } }],
      });
      t.clock.advance(10);
      await t.store.appendRunEvents(t.scope, {
        session_id: s.id,
        run_id: run,
        events: [
          { type: 'message.delta', data: { text: 'Hel' } },
          { type: 'message.delta', data: { text: 'lo' } },
        ],
      });
      const all = await t.store.listRunEvents(t.scope, s.id, run);
      expect(types(all)).toEqual(['run.started', 'message.delta', 'message.delta']);
      expect(all.map((e) => e.data)).toEqual([{ run_id: run }, { text: 'Hel' }, { text: 'lo' }]);
      expect(all.every((e) => e.run_id === run && e.session_id === s.id)).toBe(true);
      expect(all[0]?.created_at).toBe(new Date(t.clock.now() - 10).toISOString());
      expect(all[2]?.created_at).toBe(new Date(t.clock.now()).toISOString());
      expect(new Set(all.map((e) => e.id)).size).toBe(3);
      const first = all[0] as RunEvent;
      expect(await t.store.listRunEvents(t.scope, s.id, run, { after: first.id })).toEqual(all.slice(1));
      expect(await t.store.listRunEvents(t.scope, s.id, run, { after: first.id, limit: 1 })).toEqual(
        all.slice(1, 2),
      );
      expect(await t.store.listRunEvents(t.scope, s.id, run, { after: all[2]?.id ?? null })).toEqual([]);
      // Another run of the same session, and the same run id in another session, are apart.
      expect(await t.store.listRunEvents(t.scope, s.id, uniqueKey('run'))).toEqual([]);
      const other = await session(t.store, t.scope);
      expect(await t.store.listRunEvents(t.scope, other.id, run)).toEqual([]);
    });

    it('writes a turn’s events in its commit, in the batch’s order, ending with the final one', async () => {
      const x = await setup();
      const run = x.run;
      const seen: string[] = [];
      const written = await t.store.commitTurn(t.scope, {
        ...fullBatch(x, 'none'),
        events: {
          session_id: x.s.id,
          run_id: run,
          items: [{ type: 'run.started', data: { run_id: run } }],
          final: (result) => {
            seen.push(...result.messages.map((m) => m.content));
            return {
              type: 'run.completed',
              data: { reply: 'When?', session_version: result.session?.version ?? null },
            };
          },
        },
      });
      expect(seen).toEqual(['to Lisbon', 'When?']);
      const events = await t.store.listRunEvents(t.scope, x.s.id, run);
      expect(types(events)).toEqual([
        'run.started',
        'task.updated',
        'task.updated',
        'task.updated',
        'action.updated',
        'action.updated',
        'message.created',
        'message.created',
        'checkpoint.created',
        'run.completed',
      ]);
      const tasks = events.filter((e) => e.type === 'task.updated').map((e) => e.data);
      expect(tasks.map((d) => d.state)).toEqual(['INIT', 'COLLECTING', 'CANCELLED']);
      expect(tasks[1]).toMatchObject({ task_id: x.a.id, slots: { from: 'ZRH', to: 'LIS' }, version: 2 });
      const actions = events.filter((e) => e.type === 'action.updated').map((e) => e.data);
      expect(actions.map((d) => d.status)).toEqual(['PENDING', 'SUCCESS']);
      expect(actions[1]).toMatchObject({ action_id: x.pending.id, tool: 'book' });
      const messages = events.filter((e) => e.type === 'message.created');
      expect(messages.map((e) => e.data.message)).toEqual(JSON.parse(JSON.stringify(written.messages)));
      expect(events[8]?.data).toMatchObject({ checkpoint_id: written.checkpoint?.id, step: 1 });
      expect(events[9]?.data).toEqual({ reply: 'When?', session_version: written.session?.version });
    });

    it('writes no event of a commit that fails', async () => {
      for (const stale of ['session', 'task'] as const) {
        const x = await setup();
        await expectError(
          t.store,
          t.store.commitTurn(t.scope, {
            ...fullBatch(x, stale),
            events: {
              session_id: x.s.id,
              run_id: x.run,
              items: [{ type: 'run.started' }],
              final: () => ({ type: 'run.completed' }),
            },
          }),
          'version_conflict',
        );
        expect(await t.store.listRunEvents(t.scope, x.s.id, x.run)).toEqual([]);
      }
      // A final event that cannot be built fails the whole commit.
      const x = await setup();
      const before = await t.store.getSession(t.scope, x.s.id);
      await expect(
        t.store.commitTurn(t.scope, {
          ...fullBatch(x, 'none'),
          events: {
            session_id: x.s.id,
            run_id: x.run,
            final: () => ({ type: 'run.done' as 'run.completed' }),
          },
        }),
      ).rejects.toMatchObject({ code: 'invalid_request' });
      expect(await t.store.getSession(t.scope, x.s.id)).toEqual(before);
      expect(await t.store.listRunEvents(t.scope, x.s.id, x.run)).toEqual([]);
    });

    it('is scoped like its session, and gone from reads once the session expired', async () => {
      const s = await session(t.store, t.scope, 60);
      const run = uniqueKey('run');
      await t.store.appendRunEvents(t.scope, {
        session_id: s.id,
        run_id: run,
        events: [{ type: 'run.started' }],
      });
      expect(await t.store.listRunEvents(t.neighbour, s.id, run)).toEqual([]);
      expect(await t.store.listRunEvents(t.stranger, s.id, run)).toEqual([]);
      expect(types(await t.store.listRunEvents(t.tenant, s.id, run))).toEqual(['run.started']);
      await expectError(
        t.store,
        t.store.appendRunEvents(t.neighbour, {
          session_id: s.id,
          run_id: run,
          events: [{ type: 'run.failed' }],
        }),
        'not_found',
        s.id,
      );
      t.clock.advance(60_000);
      expect(await t.store.listRunEvents(t.scope, s.id, run)).toEqual([]);
      await expectError(
        t.store,
        t.store.appendRunEvents(t.scope, { session_id: s.id, run_id: run, events: [{ type: 'run.failed' }] }),
        'not_found',
      );
    });

    it('refuses bad input by name and writes nothing', async () => {
      const s = await session(t.store, t.scope);
      const run = uniqueKey('run');
      const append = (events: unknown) =>
        t.store.appendRunEvents(t.scope, { session_id: s.id, run_id: run, events } as never);
      await expectInvalid(t.store, append([{ type: 'run.begun' }]), 'append.events[0].type');
      await expectInvalid(t.store, append([{ type: 'run.started', data: [1] }]), 'append.events[0].data');
      await expectInvalid(t.store, append([{ type: 'run.started', extra: 1 }]), 'extra');
      await expectInvalid(t.store, append([]), 'append.events');
      await expectInvalid(t.store, append('run.started'), 'append.events');
      await expectInvalid(t.store, t.store.listRunEvents(t.scope, s.id, run, { after: 'abc' }), 'after');
      await expectInvalid(t.store, t.store.listRunEvents(t.scope, s.id, run, { limit: 0 }), 'limit');
      await expectInvalid(t.store, t.store.listRunEvents(t.scope, 'nope', run), 'session id');
      expect(await t.store.listRunEvents(t.scope, s.id, run)).toEqual([]);
    });

    it('is kept for the TTL after the run’s newest event, then swept', async () => {
      const s = await session(t.store, t.scope, 100_000);
      const done = uniqueKey('run');
      const live = uniqueKey('run');
      const append = (run_id: string, type: 'run.started' | 'run.completed') =>
        t.store.appendRunEvents(t.scope, { session_id: s.id, run_id, events: [{ type }] });
      await append(done, 'run.started');
      await append(live, 'run.started');
      t.clock.advance(1_800_000);
      await append(done, 'run.completed');
      await append(live, 'message.delta' as 'run.started');
      t.clock.advance(1_800_000);
      // Both runs' first events are an hour old; each run has a newer one, so nothing goes.
      await t.store.sweepExpired(10_000);
      expect(types(await t.store.listRunEvents(t.scope, s.id, done))).toEqual([
        'run.started',
        'run.completed',
      ]);
      t.clock.advance(1_000);
      await append(live, 'run.completed');
      t.clock.advance(1_800_000);
      await t.store.sweepExpired(10_000);
      expect(await t.store.listRunEvents(t.scope, s.id, done)).toEqual([]);
      expect(types(await t.store.listRunEvents(t.scope, s.id, live))).toEqual([
        'run.started',
        'message.delta',
        'run.completed',
      ]);
    });
  });
}
