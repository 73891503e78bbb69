/**
 * A turn that writes memory items of another scope (`other_memory`): put as putMemory writes them, deleted
 * as deleteMemory removes them, with the rest of the batch. In one transaction with it, unless the store's
 * transactions hold one user's rows only (`capabilities.oneUserPerTransaction`): then the puts are written
 * before the rest and the deletes after it.
 */
import { describe, expect, it } from 'vitest';
import type { Scope, TurnBatch } from '../../store/types.js';
import type { Ctx } from './context.js';
import { expectError, expectInvalid, ms } from './expect.js';
import { snapshot, turnFixtures } from './turn-fixtures.js';

export function turnOtherMemoryTests(t: Ctx): void {
  const { setup, fullBatch } = turnFixtures(t);
  /** Another tenant's user: the scope a runtime keeps its own records in. */
  const own = (): Scope => ({ tenant_id: `${t.scope.tenant_id}.own`, user_id: 'recovery' });
  const mark = (key: string) => ({ namespace: 'runs', key, value: { run: key }, ttl_seconds: 600 });
  const items = async (scope: Scope) =>
    (await t.store.listMemory(scope, 'runs')).items.map((item) => [item.key, item.value]);

  describe('a turn that writes memory of another scope', () => {
    it('puts and deletes the items with the batch, whatever its shape, and answers nothing of them', async () => {
      for (const shape of ['final', 'full', 'memory only'] as const) {
        const x = await setup();
        const other = { tenant_id: `${t.scope.tenant_id}.own.${shape.replace(' ', '_')}`, user_id: 'r' };
        const kept = await t.store.putMemory(other, { ...mark('kept'), value: 'before' });
        await t.store.putMemory(other, mark('gone'));
        t.clock.advance(5_000);
        const base: TurnBatch =
          shape === 'final'
            ? { messages: { session_id: x.s.id, items: [{ role: 'assistant', content: 'Done.' }] } }
            : shape === 'full'
              ? fullBatch(x, 'none')
              : {};
        const result = await t.store.commitTurn(t.scope, {
          ...base,
          other_memory: {
            scope: other,
            put: [mark('kept'), mark('new')],
            delete: [
              { namespace: 'runs', key: 'gone' },
              { namespace: 'runs', key: 'never-there' },
            ],
          },
        });
        expect(result.memory, shape).toBeUndefined();
        expect(JSON.stringify(result), shape).not.toContain('"runs"');
        expect(await items(other), shape).toEqual([
          ['kept', { run: 'kept' }],
          ['new', { run: 'new' }],
        ]);
        // As putMemory writes: a live item keeps its created_at; the TTL counts from now.
        const written = await t.store.getMemory(other, 'runs', 'kept');
        expect(written?.created_at, shape).toBe(kept.created_at);
        expect(ms(written?.updated_at ?? ''), shape).toBe(ms(kept.updated_at) + 5_000);
        expect(ms(written?.expires_at ?? ''), shape).toBe(t.clock.now() + 600_000);
        // Nothing of it in the batch's own scope, nor for the other scope's neighbour.
        expect(await items(t.scope), shape).toEqual([]);
        expect(await items({ ...other, user_id: 'someone-else' }), shape).toEqual([]);
        if (shape !== 'memory only') expect(result.messages.length, shape).toBeGreaterThan(0);
      }
    });

    it('a batch refused for a stale version deletes nothing, and puts nothing where it is one transaction', async () => {
      const x = await setup();
      const other = own();
      await t.store.putMemory(other, mark('stays'));
      const before = await items(other);
      await expectError(
        t.store,
        t.store.commitTurn(t.scope, {
          ...fullBatch(x, 'task'),
          other_memory: { scope: other, put: [mark('put')], delete: [{ namespace: 'runs', key: 'stays' }] },
        }),
        'version_conflict',
      );
      // Apart (one user per transaction): the puts went first and stay; the deletes, after it, never ran.
      const apart = t.store.capabilities.oneUserPerTransaction === true;
      expect(await items(other)).toEqual(apart ? [['put', { run: 'put' }], ...before] : before);
      await t.store.deleteMemory(other, 'runs', 'put');
    });

    it('refuses a malformed other_memory and changes nothing', async () => {
      const x = await setup();
      const other = own();
      await t.store.putMemory(other, mark('stays'));
      const before = await snapshot(t.store, t, x.s.id, [x.a.id, x.b.id], x.run);
      const bad: [unknown, string][] = [
        ['runs', 'batch.other_memory must be'],
        [{ put: [mark('a')] }, 'batch.other_memory.scope must be'],
        [{ scope: { tenant_id: other.tenant_id } }, 'batch.other_memory.scope.user_id'],
        [{ scope: { ...other, user_id: '' } }, 'batch.other_memory.scope.user_id'],
        [{ scope: other, put: mark('a') }, 'batch.other_memory.put must be an array'],
        [{ scope: other, put: [{ ...mark('a'), key: '' }] }, 'batch.other_memory.put[0].key'],
        [{ scope: other, put: [{ ...mark('a'), value: new Date(0) }] }, 'batch.other_memory.put[0].value'],
        [{ scope: other, put: [{ ...mark('a'), ttl_seconds: 0 }] }, 'batch.other_memory.put[0].ttl_seconds'],
        [{ scope: other, delete: [{ namespace: 'runs' }] }, 'batch.other_memory.delete[0].key'],
        [
          { scope: other, delete: [{ namespace: 'runs', key: 'x', value: 1 }] },
          'batch.other_memory.delete[0]',
        ],
        [{ scope: other, colour: 'red' }, 'batch.other_memory'],
        [
          { scope: other, put: [mark('twice')], delete: [{ namespace: 'runs', key: 'twice' }] },
          'names one namespace and key twice',
        ],
      ];
      for (const [other_memory, says] of bad) {
        await expectInvalid(
          t.store,
          t.store.commitTurn(t.scope, {
            ...fullBatch(x, 'none'),
            other_memory: other_memory as TurnBatch['other_memory'],
          }),
          says,
        );
      }
      expect(await snapshot(t.store, t, x.s.id, [x.a.id, x.b.id], x.run)).toEqual(before);
      expect(await items(other)).toEqual([['stays', { run: 'stays' }]]);
    });
  });
}
