/**
 * Concurrent callers of one store (in one process). Rules: of many updates naming the same version exactly
 * one wins and the rest get `version_conflict`; concurrent turns appending to one session keep seq
 * gap-free; concurrent read-modify-write loops with retry lose no update.
 */
import { describe, expect, it } from 'vitest';
import { isAgentStateError } from '../../core/errors.js';
import type { Ctx } from './context.js';
import { session, task } from './fixtures.js';

export function concurrencyTests(t: Ctx): void {
  describe('concurrent callers', () => {
    it('20 task updates naming one version: exactly one wins, the rest conflict', async () => {
      const k = await task(t.store, t.scope);
      const outcomes = await Promise.allSettled(
        Array.from({ length: 20 }, (_, i) => t.store.updateTask(t.scope, k.id, 1, { data: { writer: i } })),
      );
      const won = outcomes.filter((o) => o.status === 'fulfilled');
      expect(won).toHaveLength(1);
      for (const o of outcomes) {
        if (o.status === 'rejected') expect(isAgentStateError(o.reason, 'version_conflict')).toBe(true);
      }
      const read = await t.store.getTask(t.scope, k.id);
      expect(read?.version).toBe(2);
      expect(read?.data).toEqual((won[0] as PromiseFulfilledResult<{ data: unknown }>).value.data);
    });

    it('20 session updates naming one version: exactly one wins', async () => {
      const s = await session(t.store, t.scope);
      const outcomes = await Promise.allSettled(
        Array.from({ length: 20 }, (_, i) =>
          t.store.updateSession(t.scope, s.id, 1, { context: { writer: i } }),
        ),
      );
      expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
      expect((await t.store.getSession(t.scope, s.id))?.version).toBe(2);
    });

    it('10 concurrent turns of 3 messages each keep seq gap-free', async () => {
      const s = await session(t.store, t.scope);
      const results = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          t.store.commitTurn(t.scope, {
            messages: {
              session_id: s.id,
              items: [0, 1, 2].map((k) => ({ role: 'user' as const, content: `${i}.${k}` })),
            },
          }),
        ),
      );
      const all = await t.store.listMessages(t.scope, s.id, { limit: 100 });
      expect(all.map((m) => m.seq)).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
      for (const r of results) {
        const seqs = r.messages.map((m) => m.seq);
        expect(seqs).toEqual([seqs[0]!, seqs[0]! + 1, seqs[0]! + 2]);
      }
    });

    it('4 concurrent read-modify-write loops with retry lose no update', async () => {
      const k = await t.store.createTask(t.scope, { type: 'counter', data: { counter: 0 } });
      const loop = async () => {
        for (let done = 0; done < 10; ) {
          const current = await t.store.getTask(t.scope, k.id);
          const counter = current?.data.counter as number;
          try {
            await t.store.updateTask(t.scope, k.id, current!.version, { data: { counter: counter + 1 } });
            done++;
          } catch (error) {
            if (!isAgentStateError(error, 'version_conflict')) throw error;
          }
        }
      };
      await Promise.all([loop(), loop(), loop(), loop()]);
      const final = await t.store.getTask(t.scope, k.id);
      expect(final?.data.counter).toBe(40);
      expect(final?.version).toBe(41);
    });
  });
}
