/**
 * Unknown fields. Rules: a field an input, patch, batch or list query does not have (a typo such as
 * `ttl_second`, or a field of another kind of record) is `invalid_request` naming it, and nothing is
 * stored; never silently left out.
 */
import { describe, expect, it } from 'vitest';
import type { StateStore } from '../../store/types.js';
import type { Ctx } from './context.js';
import { expectInvalid } from './expect.js';
import { action, session, task, uniqueKey } from './fixtures.js';

/** Bypasses the compile-time types, as a JavaScript caller or a JSON body would. */
function loose<T>(value: object): T {
  return value as T;
}

export function unknownFieldTests(t: Ctx): void {
  describe('unknown fields', () => {
    it('are refused by name on every input and patch, and nothing is stored', async () => {
      const s: StateStore = t.store;
      await expectInvalid(s, s.createSession(t.scope, loose({ ttl_second: 60 })), 'ttl_second');
      expect((await s.listSessions(t.scope)).items).toEqual([]);
      const live = await session(s, t.scope);
      await expectInvalid(s, s.updateSession(t.scope, live.id, 1, loose({ statuss: 'paused' })), 'statuss');
      expect((await s.getSession(t.scope, live.id))?.version).toBe(1);
      await expectInvalid(s, s.createTask(t.scope, loose({ type: 'flight', slot: {} })), 'slot');
      expect((await s.listTasks(t.scope)).items).toEqual([]);
      const open = await task(s, t.scope, live.id);
      await expectInvalid(
        s,
        s.updateTask(t.scope, open.id, open.version, loose({ state: 'COLLECTING', reason: 'x' })),
        'reason',
      );
      expect((await s.getTask(t.scope, open.id))?.version).toBe(open.version);
      const key = uniqueKey();
      await expectInvalid(
        s,
        s.beginAction(
          t.scope,
          loose({ task_id: open.id, type: 'tool_call', params: null, idempotency_key: key, retries: 2 }),
        ),
        'retries',
      );
      expect(await s.getActionByKey(t.scope, key)).toBeNull();
      const begun = await action(s, t.scope, open.id);
      await expectInvalid(
        s,
        s.completeAction(t.scope, begun.id, loose({ status: 'SUCCESS', results: {} })),
        'results',
      );
      await expectInvalid(
        s,
        s.completeAction(
          t.scope,
          begun.id,
          loose({ status: 'FAILED', error: { code: 'x', message: 'y', retry: true } }),
        ),
        'retry',
      );
      expect((await s.getAction(t.scope, begun.id))?.status).toBe('PENDING');
      await expectInvalid(
        s,
        s.putMemory(t.scope, loose({ namespace: 'n', key: 'k', value: 1, ttl: 5 })),
        'ttl',
      );
      expect(await s.getMemory(t.scope, 'n', 'k')).toBeNull();
      await expectInvalid(
        s,
        s.putCheckpoint(t.scope, loose({ run_id: 'run-x', step: 0, channels: {}, labels: [] })),
        'labels',
      );
      expect(await s.latestCheckpoint(t.scope, 'run-x')).toBeNull();
    });

    it('are refused by name in a turn batch, and nothing of the batch is stored', async () => {
      const s = t.store;
      const live = await session(s, t.scope);
      const open = await task(s, t.scope, live.id);
      const batches: [object, string][] = [
        [{ sessions: { id: live.id, expected_version: 1, patch: {} } }, 'sessions'],
        [{ session: { id: live.id, expected_version: 1, patch: {}, force: true } }, 'force'],
        [
          { update_tasks: [{ id: open.id, expected_version: open.version, patch: {}, kind: 'update' }] },
          'kind',
        ],
        [{ messages: { session_id: live.id, items: [{ role: 'user', content: 'hi' }], seq: 1 } }, 'seq'],
      ];
      for (const [batch, field] of batches) {
        await expectInvalid(s, s.commitTurn(t.scope, loose(batch)), field);
      }
      expect(await s.listMessages(t.scope, live.id)).toEqual([]);
      expect((await s.getTask(t.scope, open.id))?.version).toBe(open.version);
    });

    it('are refused by name in list queries', async () => {
      const s = t.store;
      await expectInvalid(s, s.listSessions(t.scope, loose({ state: 'active' })), 'state');
      await expectInvalid(s, s.listTasks(t.scope, loose({ status: 'DONE' })), 'status');
      await expectInvalid(s, s.listActions(t.scope, loose({ task: 'x' })), 'task');
      await expectInvalid(s, s.listMemory(t.scope, 'n', loose({ prefx: 'a' })), 'prefx');
    });
  });
}
