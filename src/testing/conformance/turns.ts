/**
 * Atomic turns. Rules: commitTurn applies, in this order, the session patch, created tasks, task updates,
 * begun actions (same idempotency rule as beginAction; the task may be one created in the same batch),
 * completed actions, messages and the checkpoint. Either all of it becomes visible or none of it does: bad
 * input, a stale version (`version_conflict` naming the record), a missing record (`not_found`) or a refused
 * transition leaves every record of the batch unchanged. TurnResult.session is the session after the batch
 * when the batch patched it or appended to it, else null.
 */
import { describe, expect, it } from 'vitest';
import { newId } from '../../core/ids.js';
import type { TurnBatch } from '../../store/types.js';
import type { Ctx } from './context.js';
import { expectError, expectInvalid, ms } from './expect.js';
import { session, task, uniqueKey } from './fixtures.js';
import { snapshot, turnFixtures } from './turn-fixtures.js';
import { turnOptionTests } from './turn-options.js';
import { turnOtherMemoryTests } from './turn-other-memory.js';

export function turnTests(t: Ctx): void {
  const { setup, fullBatch } = turnFixtures(t);

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

  turnOptionTests(t);
  turnOtherMemoryTests(t);
}
