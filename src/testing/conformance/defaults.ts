/**
 * Defaults of the contract: lists return DEFAULT_PAGE_LIMIT (50) items when no limit is given, messages 100,
 * checkpoint history 20; MAX_PAGE_LIMIT (500) is accepted.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT } from '../../store/types.js';
import type { Ctx } from './context.js';
import { collect, session, task, uniqueKey } from './fixtures.js';

export function defaultTests(t: Ctx): void {
  describe('defaults', () => {
    it('lists of sessions and tasks give DEFAULT_PAGE_LIMIT items when no limit is given', async () => {
      for (let i = 0; i < DEFAULT_PAGE_LIMIT + 5; i++) {
        await session(t.store, t.scope);
        await task(t.store, t.scope);
      }
      const sessions = await t.store.listSessions(t.scope);
      expect(sessions.items).toHaveLength(DEFAULT_PAGE_LIMIT);
      expect(sessions.next_cursor).not.toBeNull();
      const rest = await t.store.listSessions(t.scope, { cursor: sessions.next_cursor });
      expect(rest.items).toHaveLength(5);
      expect(rest.next_cursor).toBeNull();
      expect((await t.store.listTasks(t.scope)).items).toHaveLength(DEFAULT_PAGE_LIMIT);
      const all = await collect((q) => t.store.listTasks(t.scope, q), MAX_PAGE_LIMIT);
      expect(all.items).toHaveLength(DEFAULT_PAGE_LIMIT + 5);
      expect(all.pages).toBe(1);
    });

    it('messages default to 100 per read, checkpoint history to 20', async () => {
      const s = await session(t.store, t.scope);
      await t.store.appendMessages(
        t.scope,
        s.id,
        Array.from({ length: 120 }, (_, i) => ({ role: 'user' as const, content: `m${i}` })),
      );
      const first = await t.store.listMessages(t.scope, s.id);
      expect(first.map((m) => m.seq)).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
      const run = `run-${uniqueKey()}`;
      for (let i = 0; i < 23; i++)
        await t.store.putCheckpoint(t.scope, { run_id: run, step: i, channels: { i } });
      const history = await t.store.listCheckpoints(t.scope, run);
      expect(history.items.map((cp) => cp.step)).toEqual(Array.from({ length: 20 }, (_, i) => 22 - i));
      expect(history.next_cursor).not.toBeNull();
    });
  });
}
