/**
 * List cursors. Rules: a cursor opens only for the list and the scope it was handed to (the same user, or
 * the same tenant-wide caller); used with another list, another user, another tenant or the tenant-wide
 * scope instead of the user's, it is `invalid_request` naming the cursor and returns nothing. A changed
 * cursor is refused the same way. A cursor keeps working in another store opened on the same data.
 */
import { describe, expect, it } from 'vitest';
import { openStore } from '../../store/open.js';
import type { Page, PageQuery, ReadScope, Scope, StateStore } from '../../store/types.js';
import type { Ctx } from './context.js';
import { expectInvalid } from './expect.js';
import { action, ids, session, task } from './fixtures.js';
import type { StoreHarness } from './harness.js';

interface Lister {
  readonly name: string;
  /** Makes three records of the list for `scope`. */
  make(store: StateStore, scope: Scope): Promise<void>;
  list(store: StateStore, scope: ReadScope, query: PageQuery): Promise<Page<{ id?: string; key?: string }>>;
  /** Memory is listed per user only. */
  readonly userOnly?: boolean;
}

const LISTS: readonly Lister[] = [
  {
    name: 'sessions',
    make: async (s, sc) => {
      for (let i = 0; i < 3; i++) await session(s, sc);
    },
    list: (s, sc, q) => s.listSessions(sc, q),
  },
  {
    name: 'tasks',
    make: async (s, sc) => {
      for (let i = 0; i < 3; i++) await task(s, sc);
    },
    list: (s, sc, q) => s.listTasks(sc, q),
  },
  {
    name: 'actions',
    make: async (s, sc) => {
      const owner = await task(s, sc);
      for (let i = 0; i < 3; i++) await action(s, sc, owner.id);
    },
    list: (s, sc, q) => s.listActions(sc, q),
  },
  {
    name: 'memory',
    userOnly: true,
    make: async (s, sc) => {
      for (const key of ['a', 'b', 'c']) await s.putMemory(sc, { namespace: 'prefs', key, value: key });
    },
    list: (s, sc, q) => s.listMemory(sc as Scope, 'prefs', q),
  },
];

function names(page: Page<{ id?: string; key?: string }>): string[] {
  return page.items.map((item) => item.id ?? item.key ?? '');
}

export function cursorTests(t: Ctx, harness: StoreHarness): void {
  describe('cursors', () => {
    for (const lister of LISTS) {
      it(`${lister.name}: a cursor opens only for its list and its caller`, async () => {
        const s = t.store;
        for (const scope of [t.scope, t.neighbour, t.stranger]) await lister.make(s, scope);
        const first = await lister.list(s, t.scope, { limit: 1 });
        const cursor = first.next_cursor;
        expect(cursor).not.toBeNull();
        const rest = await lister.list(s, t.scope, { limit: 5, cursor });
        expect(rest.items).toHaveLength(2);
        const others: ReadScope[] = [t.neighbour, t.stranger];
        if (lister.userOnly !== true) others.push(t.tenant, { tenant_id: t.stranger.tenant_id });
        for (const other of others)
          await expectInvalid(s, lister.list(s, other, { limit: 5, cursor }), 'cursor');
        for (const otherList of LISTS) {
          if (otherList.name === lister.name) continue;
          await expectInvalid(s, otherList.list(s, t.scope, { limit: 5, cursor }), 'cursor');
        }
        const changed = `${cursor!.slice(0, -2)}${cursor!.endsWith('AA') ? 'BB' : 'AA'}`;
        await expectInvalid(s, lister.list(s, t.scope, { limit: 5, cursor: changed }), 'cursor');
      });
    }

    it('a tenant-wide cursor pages the tenant and opens for no single user', async () => {
      const s = t.store;
      await LISTS[0]!.make(s, t.scope);
      await LISTS[0]!.make(s, t.neighbour);
      const first = await s.listSessions(t.tenant, { limit: 4 });
      const rest = await s.listSessions(t.tenant, { limit: 4, cursor: first.next_cursor });
      expect(new Set([...ids(first.items), ...ids(rest.items)]).size).toBe(6);
      await expectInvalid(s, s.listSessions(t.scope, { cursor: first.next_cursor }), 'cursor');
    });

    it('a cursor opens in another store on the same data', async () => {
      if (harness.url === undefined || !t.store.capabilities.multiProcess) return;
      await LISTS[1]!.make(t.store, t.scope);
      const first = await t.store.listTasks(t.scope, { limit: 1 });
      const other = await openStore(harness.url);
      try {
        const rest = await other.listTasks(t.scope, { cursor: first.next_cursor });
        expect(names(rest)).toHaveLength(2);
        expect(names(rest)).not.toContain(names(first)[0]);
      } finally {
        await other.close();
      }
    });
  });
}
