/**
 * Scope. Rules: every read and list is filtered by tenant, and by user when the scope names one, inside the
 * adapter. A record of user A in tenant T is invisible to user B of T, to tenant U (even to a user of U with
 * A's user id), and to the tenant-wide scope of U; it is visible to A and to the tenant-wide scope of T.
 * Writes through another scope see the record as missing (`not_found`, null or false) and change nothing.
 * An empty user_id is refused, never read as "the whole tenant".
 */
import { describe, expect, it } from 'vitest';
import type { ReadScope, Scope, StateStore } from '../../store/types.js';
import type { Ctx } from './context.js';
import { expectError, expectInvalid } from './expect.js';
import { action, session, task, uniqueKey } from './fixtures.js';

interface Fixture {
  sessionId: string;
  taskId: string;
  actionId: string;
  actionKey: string;
  checkpointId: string;
  run: string;
}

interface Probe {
  readonly name: string;
  /** Takes a user scope only (no tenant-wide form). */
  readonly userOnly?: boolean;
  /** True when the record of the fixture is visible through `scope`. */
  see(store: StateStore, scope: ReadScope, f: Fixture): Promise<boolean>;
}

const PROBES: readonly Probe[] = [
  { name: 'getSession', see: async (s, sc, f) => (await s.getSession(sc, f.sessionId)) !== null },
  {
    name: 'listSessions',
    see: async (s, sc, f) =>
      (await s.listSessions(sc, { limit: 500 })).items.some((x) => x.id === f.sessionId),
  },
  {
    name: 'listSessions by status',
    see: async (s, sc, f) =>
      (await s.listSessions(sc, { status: 'active' })).items.some((x) => x.id === f.sessionId),
  },
  { name: 'listMessages', see: async (s, sc, f) => (await s.listMessages(sc, f.sessionId)).length > 0 },
  { name: 'lastMessages', see: async (s, sc, f) => (await s.lastMessages(sc, f.sessionId, 5)).length > 0 },
  { name: 'getTask', see: async (s, sc, f) => (await s.getTask(sc, f.taskId)) !== null },
  {
    name: 'listTasks',
    see: async (s, sc, f) => (await s.listTasks(sc, { limit: 500 })).items.some((x) => x.id === f.taskId),
  },
  {
    name: 'listTasks by session',
    see: async (s, sc, f) => (await s.listTasks(sc, { session_id: f.sessionId })).items.length > 0,
  },
  { name: 'listTaskEvents', see: async (s, sc, f) => (await s.listTaskEvents(sc, f.taskId)).length > 0 },
  { name: 'getAction', see: async (s, sc, f) => (await s.getAction(sc, f.actionId)) !== null },
  {
    name: 'getActionByKey',
    userOnly: true,
    see: async (s, sc, f) => (await s.getActionByKey(sc as Scope, f.actionKey)) !== null,
  },
  {
    name: 'listActions',
    see: async (s, sc, f) => (await s.listActions(sc, { limit: 500 })).items.some((x) => x.id === f.actionId),
  },
  {
    name: 'listActions by task',
    see: async (s, sc, f) => (await s.listActions(sc, { task_id: f.taskId })).items.length > 0,
  },
  { name: 'getCheckpoint', see: async (s, sc, f) => (await s.getCheckpoint(sc, f.checkpointId)) !== null },
  { name: 'latestCheckpoint', see: async (s, sc, f) => (await s.latestCheckpoint(sc, f.run)) !== null },
  { name: 'listCheckpoints', see: async (s, sc, f) => (await s.listCheckpoints(sc, f.run)).items.length > 0 },
  {
    name: 'getMemory',
    userOnly: true,
    see: async (s, sc) => (await s.getMemory(sc as Scope, 'ns', 'k')) !== null,
  },
  {
    name: 'listMemory',
    userOnly: true,
    see: async (s, sc) => (await s.listMemory(sc as Scope, 'ns')).items.length > 0,
  },
];

export function scopeTests(t: Ctx): void {
  async function fixture(): Promise<Fixture> {
    const s = await session(t.store, t.scope);
    await t.store.appendMessages(t.scope, s.id, [{ role: 'user', content: 'secret' }]);
    const k = await task(t.store, t.scope, s.id);
    const actionKey = uniqueKey();
    const a = await action(t.store, t.scope, k.id, actionKey);
    const run = `run-${uniqueKey()}`;
    const cp = await t.store.putCheckpoint(t.scope, {
      run_id: run,
      session_id: s.id,
      step: 0,
      channels: { x: 1 },
    });
    await t.store.putMemory(t.scope, { namespace: 'ns', key: 'k', value: 'secret' });
    return { sessionId: s.id, taskId: k.id, actionId: a.id, actionKey, checkpointId: cp.id, run };
  }

  describe('scope', () => {
    for (const probe of PROBES) {
      it(`${probe.name}: only the owner${probe.userOnly ? '' : ' and its tenant'} can see a record`, async () => {
        const f = await fixture();
        const sameUserOtherTenant: Scope = { tenant_id: t.stranger.tenant_id, user_id: t.scope.user_id };
        expect(await probe.see(t.store, t.scope, f)).toBe(true);
        expect(await probe.see(t.store, t.neighbour, f)).toBe(false);
        expect(await probe.see(t.store, t.stranger, f)).toBe(false);
        expect(await probe.see(t.store, sameUserOtherTenant, f)).toBe(false);
        if (!probe.userOnly) {
          expect(await probe.see(t.store, t.tenant, f)).toBe(true);
          expect(await probe.see(t.store, { tenant_id: t.stranger.tenant_id }, f)).toBe(false);
        }
      });
    }

    it('writes through another scope find nothing and change nothing', async () => {
      const f = await fixture();
      const s = t.store;
      for (const other of [t.neighbour, t.stranger, { tenant_id: t.stranger.tenant_id }]) {
        await expectError(s, s.updateSession(other, f.sessionId, 1, { context: { x: 1 } }), 'not_found');
        await expectError(
          s,
          s.appendMessages(other, f.sessionId, [{ role: 'user', content: 'x' }]),
          'not_found',
        );
        expect(await s.touchSession(other, f.sessionId)).toBeNull();
        expect(await s.endSession(other, f.sessionId)).toBeNull();
        expect(await s.deleteSession(other, f.sessionId)).toBe(false);
        await expectError(s, s.updateTask(other, f.taskId, 1, { state: 'CANCELLED' }), 'not_found');
        await expectError(s, s.completeAction(other, f.actionId, { status: 'SUCCESS' }), 'not_found');
        await expectError(s, s.markActionUnknown(other, f.actionId, 'x'), 'not_found');
        await expectError(
          s,
          s.resolveAction(other, f.actionId, { status: 'FAILED', note: 'x' }),
          'not_found',
        );
        await expectError(s, s.recordAttempt(other, f.actionId), 'not_found');
        expect(await s.pruneCheckpoints(other, f.run, 0)).toBe(0);
      }
      for (const other of [t.neighbour, t.stranger]) {
        expect(await s.deleteMemory(other, 'ns', 'k')).toBe(false);
        await expectError(
          s,
          s.commitTurn(other, {
            update_tasks: [{ id: f.taskId, expected_version: 1, patch: { status_line: 'x' } }],
          }),
          'not_found',
        );
        await expectError(
          s,
          s.beginAction(other, { task_id: f.taskId, type: 'x', params: null, idempotency_key: uniqueKey() }),
          'not_found',
        );
      }
      expect((await s.getSession(t.scope, f.sessionId))?.version).toBe(1);
      expect((await s.getSession(t.scope, f.sessionId))?.status).toBe('active');
      expect(await s.listMessages(t.scope, f.sessionId)).toHaveLength(1);
      expect((await s.getTask(t.scope, f.taskId))?.version).toBe(1);
      expect((await s.getAction(t.scope, f.actionId))?.status).toBe('PENDING');
      expect((await s.getAction(t.scope, f.actionId))?.attempts).toBe(1);
      expect(await s.getCheckpoint(t.scope, f.checkpointId)).not.toBeNull();
      expect(await s.getMemory(t.scope, 'ns', 'k')).not.toBeNull();
    });

    it('a tenant-wide scope may update its users records', async () => {
      const f = await fixture();
      const updated = await t.store.updateTask(t.tenant, f.taskId, 1, { state: 'COLLECTING' });
      expect(updated.user_id).toBe(t.scope.user_id);
      const session = await t.store.updateSession(t.tenant, f.sessionId, 1, { status: 'paused' });
      expect(session.user_id).toBe(t.scope.user_id);
    });

    it('a tenant-wide list holds the records of every user of the tenant, and no other tenant', async () => {
      const mine = await session(t.store, t.scope);
      const theirs = await session(t.store, t.neighbour);
      const foreign = await session(t.store, t.stranger);
      const listed = (await t.store.listSessions(t.tenant, { limit: 500 })).items.map((x) => x.id);
      expect(listed.sort()).toEqual([mine.id, theirs.id].sort());
      expect(listed).not.toContain(foreign.id);
    });

    it('an empty or missing tenant, or an empty user id, is refused, never widened', async () => {
      const f = await fixture();
      const s = t.store;
      const emptyUser = { tenant_id: t.scope.tenant_id, user_id: '' };
      await expectInvalid(s, s.getSession(emptyUser, f.sessionId), 'user_id');
      await expectInvalid(s, s.listTasks(emptyUser), 'user_id');
      await expectInvalid(s, s.listSessions({ tenant_id: '' }), 'tenant_id');
      await expectInvalid(s, s.getTask({} as never, f.taskId), 'tenant_id');
      await expectInvalid(s, s.getMemory(emptyUser, 'ns', 'k'), 'user_id');
      await expectInvalid(
        s,
        s.createTask({ tenant_id: t.scope.tenant_id } as never, { type: 'x' }),
        'user_id',
      );
    });
  });
}
