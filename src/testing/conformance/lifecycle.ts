/**
 * Lifecycle. Rules: `adapter` names the adapter and `capabilities` says what it can do; ping answers true
 * while open; close() is safe to call twice (and concurrently); after close every call fails with code
 * `closed` and a message starting with the adapter's name.
 */
import { describe, expect, it } from 'vitest';
import { newId } from '../../core/ids.js';
import type { StateStore } from '../../store/types.js';
import type { Ctx } from './context.js';
import { expectError } from './expect.js';

export function lifecycleTests(t: Ctx): void {
  describe('lifecycle', () => {
    it('names its adapter, declares its capabilities and answers ping', async () => {
      expect(t.store.adapter).toMatch(/^[a-z]+$/);
      expect(typeof t.store.capabilities.multiProcess).toBe('boolean');
      expect(typeof t.store.capabilities.durable).toBe('boolean');
      expect(await t.store.ping()).toBe(true);
    });

    it('close is safe twice, also at once', async () => {
      await t.store.close();
      await t.store.close();
      await Promise.all([t.store.close(), t.store.close()]);
    });

    it('every call after close fails with closed', async () => {
      const scope = t.scope;
      const sid = newId('session');
      const tid = newId('task');
      const aid = newId('action');
      await t.store.close();
      const calls: [string, (s: StateStore) => Promise<unknown>][] = [
        ['createSession', (s) => s.createSession(scope, {})],
        ['getSession', (s) => s.getSession(scope, sid)],
        ['listSessions', (s) => s.listSessions(scope)],
        ['updateSession', (s) => s.updateSession(scope, sid, 1, {})],
        ['touchSession', (s) => s.touchSession(scope, sid)],
        ['endSession', (s) => s.endSession(scope, sid)],
        ['deleteSession', (s) => s.deleteSession(scope, sid)],
        ['appendMessages', (s) => s.appendMessages(scope, sid, [{ role: 'user', content: 'x' }])],
        ['listMessages', (s) => s.listMessages(scope, sid)],
        ['lastMessages', (s) => s.lastMessages(scope, sid, 1)],
        ['createTask', (s) => s.createTask(scope, { type: 'x' })],
        ['getTask', (s) => s.getTask(scope, tid)],
        ['listTasks', (s) => s.listTasks(scope)],
        ['updateTask', (s) => s.updateTask(scope, tid, 1, {})],
        ['listTaskEvents', (s) => s.listTaskEvents(scope, tid)],
        [
          'beginAction',
          (s) => s.beginAction(scope, { task_id: tid, type: 'x', params: null, idempotency_key: 'k' }),
        ],
        ['getAction', (s) => s.getAction(scope, aid)],
        ['getActionByKey', (s) => s.getActionByKey(scope, 'k')],
        ['completeAction', (s) => s.completeAction(scope, aid, { status: 'SUCCESS' })],
        ['markActionUnknown', (s) => s.markActionUnknown(scope, aid, 'x')],
        ['resolveAction', (s) => s.resolveAction(scope, aid, { status: 'SUCCESS', note: 'x' })],
        ['recordAttempt', (s) => s.recordAttempt(scope, aid)],
        ['listActions', (s) => s.listActions(scope)],
        ['putCheckpoint', (s) => s.putCheckpoint(scope, { run_id: 'r', step: 0, channels: {} })],
        ['getCheckpoint', (s) => s.getCheckpoint(scope, newId('checkpoint'))],
        ['latestCheckpoint', (s) => s.latestCheckpoint(scope, 'r')],
        ['listCheckpoints', (s) => s.listCheckpoints(scope, 'r')],
        ['pruneCheckpoints', (s) => s.pruneCheckpoints(scope, 'r', 1)],
        ['putMemory', (s) => s.putMemory(scope, { namespace: 'n', key: 'k', value: 1 })],
        ['getMemory', (s) => s.getMemory(scope, 'n', 'k')],
        ['deleteMemory', (s) => s.deleteMemory(scope, 'n', 'k')],
        ['listMemory', (s) => s.listMemory(scope, 'n')],
        ['commitTurn', (s) => s.commitTurn(scope, {})],
        ['acquireLease', (s) => s.acquireLease(scope, 'l', 'o', 1000)],
        ['releaseLease', (s) => s.releaseLease(scope, 'l', 'o')],
        ['claimRequestKey', (s) => s.claimRequestKey(scope, 'k', 'h', 60)],
        ['completeRequestKey', (s) => s.completeRequestKey(scope, 'k', { status: 200, body: null })],
        ['releaseRequestKey', (s) => s.releaseRequestKey(scope, 'k')],
        ['renewRequestKey', (s) => s.renewRequestKey(scope, 'k', 'h', 10)],
        [
          'appendRunEvents',
          (s) => s.appendRunEvents(scope, { session_id: 'sess_x', run_id: 'r', events: [] }),
        ],
        ['listRunEvents', (s) => s.listRunEvents(scope, 'sess_x', 'r')],
        ['sweepExpired', (s) => s.sweepExpired(10)],
        ['ping', (s) => s.ping()],
      ];
      for (const [name, call] of calls) {
        const error = await expectError(t.store, call(t.store), 'closed');
        expect(error.code, name).toBe('closed');
      }
    });
  });
}
