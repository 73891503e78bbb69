/**
 * Actions and idempotency. Rules: beginAction with a key that exists (per tenant and user) returns the
 * existing action with created=false, also under 20 concurrent callers; the task must exist in scope
 * (`not_found` otherwise); status follows ACTION_TRANSITIONS (`invalid_request` naming both statuses);
 * attempts start at 1; completed_at is set on SUCCESS or FAILED.
 */
import { describe, expect, it } from 'vitest';
import { isId, newId } from '../../core/ids.js';
import type { Ctx } from './context.js';
import { expectError, expectInvalid } from './expect.js';
import { action, ids, session, task, uniqueKey } from './fixtures.js';

export function actionTests(t: Ctx): void {
  describe('actions and idempotency', () => {
    it('begins a PENDING action recorded before it runs', async () => {
      const s = await session(t.store, t.scope);
      const tk = await task(t.store, t.scope, s.id);
      const key = uniqueKey();
      const { action: a, created } = await t.store.beginAction(t.scope, {
        task_id: tk.id,
        session_id: s.id,
        type: 'tool_call',
        tool: 'book_flight',
        params: { flight: 'LX1234', seats: ['12A', '12B'] },
        idempotency_key: key,
      });
      expect(created).toBe(true);
      expect(isId(a.id, 'action')).toBe(true);
      expect(a).toMatchObject({
        tenant_id: t.scope.tenant_id,
        user_id: t.scope.user_id,
        task_id: tk.id,
        session_id: s.id,
        type: 'tool_call',
        tool: 'book_flight',
        idempotency_key: key,
        status: 'PENDING',
        result: null,
        error: null,
        attempts: 1,
        note: null,
        completed_at: null,
      });
      expect(a.params).toEqual({ flight: 'LX1234', seats: ['12A', '12B'] });
      expect(await t.store.getAction(t.scope, a.id)).toEqual(a);
      expect(await t.store.getActionByKey(t.scope, key)).toEqual(a);
    });

    it('the same key returns the existing action, even with other params', async () => {
      const tk = await task(t.store, t.scope);
      const key = uniqueKey();
      const first = await action(t.store, t.scope, tk.id, key);
      const again = await t.store.beginAction(t.scope, {
        task_id: tk.id,
        type: 'tool_call',
        params: { other: true },
        idempotency_key: key,
      });
      expect(again.created).toBe(false);
      expect(again.action).toEqual(first);
      expect((await t.store.listActions(t.scope, { task_id: tk.id })).items).toHaveLength(1);
    });

    it('20 concurrent beginAction calls with one key make exactly one action', async () => {
      const tk = await task(t.store, t.scope);
      const key = uniqueKey();
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          t.store.beginAction(t.scope, {
            task_id: tk.id,
            type: 'tool_call',
            params: { caller: i },
            idempotency_key: key,
          }),
        ),
      );
      expect(new Set(results.map((r) => r.action.id)).size).toBe(1);
      expect(results.filter((r) => r.created)).toHaveLength(1);
      const listed = await t.store.listActions(t.scope, { task_id: tk.id });
      expect(ids(listed.items)).toEqual([results[0]!.action.id]);
    });

    it('keys are per user: the same key of another user is another action', async () => {
      const mine = await task(t.store, t.scope);
      const theirs = await task(t.store, t.neighbour);
      const key = uniqueKey();
      const a = await action(t.store, t.scope, mine.id, key);
      const b = await action(t.store, t.neighbour, theirs.id, key);
      expect(b.id).not.toBe(a.id);
      expect((await t.store.getActionByKey(t.neighbour, key))?.id).toBe(b.id);
      expect(await t.store.getActionByKey(t.stranger, key)).toBeNull();
    });

    it('the task must exist in scope', async () => {
      const missing = newId('task');
      await expectError(t.store, action(t.store, t.scope, missing), 'not_found', missing);
      const theirs = await task(t.store, t.neighbour);
      await expectError(t.store, action(t.store, t.scope, theirs.id), 'not_found', theirs.id);
      expect((await t.store.listActions(t.tenant)).items).toEqual([]);
    });

    it('completes PENDING -> SUCCESS with a result', async () => {
      const tk = await task(t.store, t.scope);
      const a = await action(t.store, t.scope, tk.id);
      t.clock.advance(2000);
      const done = await t.store.completeAction(t.scope, a.id, {
        status: 'SUCCESS',
        result: { pnr: 'ABC123' },
      });
      expect(done).toMatchObject({ status: 'SUCCESS', result: { pnr: 'ABC123' }, error: null });
      expect(done.completed_at).toBe(new Date(t.clock.now()).toISOString());
      expect(await t.store.getAction(t.scope, a.id)).toEqual(done);
    });

    it('completes PENDING -> FAILED with an error', async () => {
      const tk = await task(t.store, t.scope);
      const a = await action(t.store, t.scope, tk.id);
      const failed = await t.store.completeAction(t.scope, a.id, {
        status: 'FAILED',
        error: { code: 'sold_out', message: 'no seats left', details: { flight: 'LX1' } },
      });
      expect(failed.status).toBe('FAILED');
      expect(failed.error).toEqual({
        code: 'sold_out',
        message: 'no seats left',
        details: { flight: 'LX1' },
      });
      expect(failed.completed_at).not.toBeNull();
    });

    it('a finished action cannot change status again', async () => {
      const tk = await task(t.store, t.scope);
      const a = await action(t.store, t.scope, tk.id);
      const done = await t.store.completeAction(t.scope, a.id, { status: 'SUCCESS', result: 1 });
      await expectInvalid(
        t.store,
        t.store.completeAction(t.scope, a.id, { status: 'FAILED' }),
        'SUCCESS',
        'FAILED',
      );
      await expectInvalid(t.store, t.store.markActionUnknown(t.scope, a.id, 'timeout'), 'SUCCESS', 'UNKNOWN');
      await expectInvalid(
        t.store,
        t.store.resolveAction(t.scope, a.id, { status: 'FAILED', note: 'ops' }),
        'SUCCESS',
        'FAILED',
      );
      await expectInvalid(t.store, t.store.recordAttempt(t.scope, a.id), a.id);
      expect(await t.store.getAction(t.scope, a.id)).toEqual(done);
    });

    it('PENDING -> UNKNOWN with a note, then resolved by a person', async () => {
      const tk = await task(t.store, t.scope);
      const a = await action(t.store, t.scope, tk.id);
      const unknown = await t.store.markActionUnknown(t.scope, a.id, 'timed out, no lookup');
      expect(unknown).toMatchObject({ status: 'UNKNOWN', note: 'timed out, no lookup', completed_at: null });
      await expectInvalid(t.store, t.store.completeAction(t.scope, a.id, { status: 'SUCCESS' }), 'UNKNOWN');
      await expectInvalid(t.store, t.store.recordAttempt(t.scope, a.id));
      const resolved = await t.store.resolveAction(t.scope, a.id, {
        status: 'SUCCESS',
        result: { pnr: 'XYZ' },
        note: 'alice: found it in the airline ledger',
      });
      expect(resolved).toMatchObject({ status: 'SUCCESS', note: 'alice: found it in the airline ledger' });
      expect(resolved.result).toEqual({ pnr: 'XYZ' });
      expect(resolved.completed_at).not.toBeNull();
    });

    it('resolves a PENDING action directly', async () => {
      const tk = await task(t.store, t.scope);
      const a = await action(t.store, t.scope, tk.id);
      const resolved = await t.store.resolveAction(t.scope, a.id, {
        status: 'FAILED',
        note: 'lookup: not found',
      });
      expect(resolved).toMatchObject({ status: 'FAILED', note: 'lookup: not found' });
    });

    it('records attempts of a PENDING action', async () => {
      const tk = await task(t.store, t.scope);
      const a = await action(t.store, t.scope, tk.id);
      await t.store.recordAttempt(t.scope, a.id);
      const third = await t.store.recordAttempt(t.scope, a.id);
      expect(third.attempts).toBe(3);
      expect(third.status).toBe('PENDING');
      expect((await t.store.getAction(t.scope, a.id))?.attempts).toBe(3);
    });

    it('missing actions are null on read and not_found on write', async () => {
      const id = newId('action');
      expect(await t.store.getAction(t.scope, id)).toBeNull();
      expect(await t.store.getActionByKey(t.scope, uniqueKey())).toBeNull();
      await expectError(t.store, t.store.completeAction(t.scope, id, { status: 'SUCCESS' }), 'not_found', id);
      await expectError(t.store, t.store.markActionUnknown(t.scope, id, 'x'), 'not_found', id);
      await expectError(
        t.store,
        t.store.resolveAction(t.scope, id, { status: 'SUCCESS', note: 'x' }),
        'not_found',
      );
      await expectError(t.store, t.store.recordAttempt(t.scope, id), 'not_found', id);
    });

    it('lists newest first, filtered by task and status, with paging', async () => {
      const t1 = await task(t.store, t.scope);
      const t2 = await task(t.store, t.scope);
      const made = [];
      for (let i = 0; i < 5; i++) {
        made.push(await action(t.store, t.scope, i % 2 === 0 ? t1.id : t2.id));
        t.clock.advance(1000);
      }
      await t.store.completeAction(t.scope, made[0]!.id, { status: 'SUCCESS' });
      expect(ids((await t.store.listActions(t.scope)).items)).toEqual(ids(made).reverse());
      const ofT1 = await t.store.listActions(t.scope, { task_id: t1.id });
      expect(ids(ofT1.items)).toEqual([made[4]!.id, made[2]!.id, made[0]!.id]);
      const pending = await t.store.listActions(t.scope, { task_id: t1.id, status: 'PENDING' });
      expect(ids(pending.items)).toEqual([made[4]!.id, made[2]!.id]);
      const page1 = await t.store.listActions(t.scope, { limit: 3 });
      const page2 = await t.store.listActions(t.scope, { limit: 3, cursor: page1.next_cursor });
      expect([...ids(page1.items), ...ids(page2.items)]).toEqual(ids(made).reverse());
      expect(page2.next_cursor).toBeNull();
    });

    it('refuses bad input and stores nothing', async () => {
      const tk = await task(t.store, t.scope);
      const s = t.store;
      const good = { task_id: tk.id, type: 'tool_call', params: {}, idempotency_key: uniqueKey() };
      await expectInvalid(s, s.beginAction(t.scope, { ...good, idempotency_key: '' }), 'idempotency_key');
      await expectInvalid(s, s.beginAction(t.scope, { ...good, type: '' }), 'type');
      await expectInvalid(s, s.beginAction(t.scope, { ...good, task_id: 'task_1' }), 'task_id');
      await expectInvalid(s, s.beginAction(t.scope, { ...good, id: newId('task') }), 'id');
      await expectInvalid(s, s.beginAction(t.scope, { ...good, session_id: 'x' }), 'session_id');
      expect((await s.listActions(t.scope)).items).toEqual([]);
      const a = await action(s, t.scope, tk.id);
      await expectInvalid(s, s.completeAction(t.scope, a.id, { status: 'UNKNOWN' as never }), 'status');
      await expectInvalid(s, s.completeAction(t.scope, a.id, { status: 'PENDING' as never }), 'status');
      await expectInvalid(s, s.markActionUnknown(t.scope, a.id, ''), 'note');
      await expectInvalid(s, s.resolveAction(t.scope, a.id, { status: 'SUCCESS', note: '' }), 'note');
      for (const error of [
        { code: 'E', message: '' },
        { code: '', message: 'failed' },
      ])
        await expectInvalid(s, s.completeAction(t.scope, a.id, { status: 'FAILED', error }), 'error.');
      await expectInvalid(s, s.listActions(t.scope, { status: 'DONE' as never }), 'status');
      await expectInvalid(s, s.getAction(t.scope, tk.id));
      expect(await s.getAction(t.scope, a.id)).toEqual(a);
    });
  });
}
