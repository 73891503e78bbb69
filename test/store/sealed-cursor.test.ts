/**
 * Sealed list cursors: they show nothing of the store's write counter, two cursors of one position differ,
 * and a cursor opens only with the key, list and scope that sealed it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createMemoryStore } from '../../src/store/memory/index.js';
import { newCursorKey, openCursor, sealCursor } from '../../src/store/shared/sealed-cursor.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import type { StateStore } from '../../src/store/types.js';

const fail = (message: string): never => {
  throw new Error(message);
};
const scope = { tenant_id: 't1', user_id: 'u1' };

describe('sealed cursors', () => {
  it('open with the key, list and scope that sealed them, and no other', () => {
    const key = newCursorKey();
    const cursor = sealCursor(key, 'sessions', scope, { s: 41 });
    expect(openCursor(key, 'sessions', scope, cursor, fail)).toEqual({ s: 41 });
    expect(sealCursor(key, 'sessions', scope, { s: 41 })).not.toBe(cursor);
    expect(() => openCursor(newCursorKey(), 'sessions', scope, cursor, fail)).toThrow(/not one this store/);
    expect(() => openCursor(key, 'tasks', scope, cursor, fail)).toThrow(/for this list \(tasks\)/);
    expect(() => openCursor(key, 'sessions', { tenant_id: 't1' }, cursor, fail)).toThrow(/not one/);
    expect(() => openCursor(key, 'sessions', { ...scope, user_id: 'u2' }, cursor, fail)).toThrow(/not one/);
    expect(() => openCursor(key, 'sessions', scope, 'e30', fail)).toThrow(/not one this store/);
    expect(() => openCursor(key, 'sessions', scope, 'a b', fail)).toThrow(/not one this store/);
    expect(() => openCursor(key, 'sessions', scope, '', fail)).toThrow(/must be a string/);
    expect(openCursor(key, 'memory:n', scope, sealCursor(key, 'memory:n', scope, { k: 'x' }), fail)).toEqual({
      k: 'x',
    });
  });

  const dir = mkdtempSync(join(tmpdir(), 'agentstate-cursor-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const stores: [string, () => Promise<StateStore>][] = [
    ['memory', async () => createMemoryStore()],
    ['sqlite', () => openSqliteStore(join(dir, 'cursors.db'))],
  ];
  for (const [name, open] of stores) {
    it(`${name}: a cursor is not the write counter in clear, and does not move with other tenants' writes`, async () => {
      const store = await open();
      try {
        const me = { tenant_id: 'mine', user_id: 'me' };
        await store.createSession(me, {});
        await store.createSession(me, {});
        const before = (await store.listSessions(me, { limit: 1 })).next_cursor as string;
        for (let i = 0; i < 5; i++) await store.createSession({ tenant_id: 'theirs', user_id: `u${i}` }, {});
        const after = (await store.listSessions(me, { limit: 1 })).next_cursor as string;
        for (const cursor of [before, after]) {
          const text = Buffer.from(cursor, 'base64url').toString('latin1');
          expect(() => JSON.parse(text)).toThrow();
          expect(text).not.toMatch(/"s"|"k"/);
        }
        expect(after).not.toBe(before);
        expect(after.length).toBe(before.length);
        expect((await store.listSessions(me, { cursor: before })).items).toHaveLength(1);
        expect((await store.listSessions(me, { cursor: after })).items).toHaveLength(1);
      } finally {
        await store.close();
      }
    });
  }

  it('sqlite: a cursor still opens after the store is closed and opened again (the key is in the file)', async () => {
    const path = join(dir, 'reopen.db');
    const me = { tenant_id: 'mine', user_id: 'me' };
    const first = await openSqliteStore(path);
    await first.createSession(me, {});
    await first.createSession(me, {});
    const cursor = (await first.listSessions(me, { limit: 1 })).next_cursor;
    await first.close();
    const second = await openSqliteStore(path);
    try {
      expect((await second.listSessions(me, { cursor })).items).toHaveLength(1);
    } finally {
      await second.close();
    }
  });
});
