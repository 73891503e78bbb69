/**
 * Checkpoints. Rules: channels read back exactly as written (arrays that grow step by step, values that
 * revert to an earlier value, channels that disappear); "latest" and "newest first" mean most recently
 * written, even within one millisecond; `before` pages back through history and a page's next_cursor is the
 * `before` of the next page; prune keeps the newest N and those still read back intact.
 */
import { describe, expect, it } from 'vitest';
import { isId, newId } from '../../core/ids.js';
import type { JsonObject } from '../../core/json.js';
import type { Checkpoint } from '../../core/model.js';
import type { Ctx } from './context.js';
import { expectError, expectInvalid } from './expect.js';
import { ids, uniqueKey } from './fixtures.js';

/** The channels of step i of a run: a growing message list, a value that reverts, a channel that comes and goes. */
function channelsAt(i: number): JsonObject {
  const messages = Array.from({ length: i + 1 }, (_, k) => ({
    role: k % 2 ? 'assistant' : 'user',
    text: `m${k}`,
  }));
  const channels: JsonObject = {
    messages,
    mode: i % 3 === 2 ? 'review' : 'draft',
    counters: { steps: i, nested: { deep: [i, [i, { x: i }]] } },
    plan: i < 4 ? ['plan', 'write', 'test'] : ['plan', 'write', 'test', 'build', 'deploy'],
  };
  if (i % 4 !== 3) channels.scratch = { note: `step ${i}` };
  if (i === 5) channels.messages = [{ role: 'system', text: 'reset' }];
  return channels;
}

export function checkpointTests(t: Ctx): void {
  async function writeRun(run: string, n: number): Promise<Checkpoint[]> {
    const written: Checkpoint[] = [];
    for (let i = 0; i < n; i++) {
      written.push(
        await t.store.putCheckpoint(t.scope, {
          run_id: run,
          step: i,
          parent_id: written.at(-1)?.id ?? null,
          label: i % 2 ? 'after' : 'before',
          channels: channelsAt(i),
          metadata: { source: 'loop', i },
        }),
      );
    }
    return written;
  }

  describe('checkpoints', () => {
    it('round-trips one checkpoint with every field', async () => {
      const run = `run-${uniqueKey()}`;
      const id = newId('checkpoint');
      // A checkpoint names a session of the writer's own (another user's or none at all is refused).
      const sessionId = (await t.store.createSession(t.scope, {})).id;
      const taskId = newId('task');
      const cp = await t.store.putCheckpoint(t.scope, {
        id,
        run_id: run,
        session_id: sessionId,
        task_id: taskId,
        step: 0,
        label: 'before plan',
        channels: { empty: {}, none: null, list: [], text: 'é ✓ 日本', n: -1.5e-7 },
        metadata: { writer: 'test' },
      });
      expect(cp).toMatchObject({
        id,
        tenant_id: t.scope.tenant_id,
        user_id: t.scope.user_id,
        run_id: run,
        session_id: sessionId,
        task_id: taskId,
        step: 0,
        parent_id: null,
        label: 'before plan',
      });
      expect(await t.store.getCheckpoint(t.scope, id)).toEqual(cp);
      expect((await t.store.getCheckpoint(t.scope, id))?.channels).toEqual({
        empty: {},
        none: null,
        list: [],
        text: 'é ✓ 日本',
        n: -1.5e-7,
      });
      await expectError(
        t.store,
        t.store.putCheckpoint(t.scope, { id, run_id: run, step: 1, channels: {} }),
        'conflict',
      );
    });

    it('reads back every step of a run exactly: growing arrays, reverting values, vanishing channels', async () => {
      const run = `run-${uniqueKey()}`;
      const written = await writeRun(run, 9);
      for (const [i, cp] of written.entries()) {
        expect(isId(cp.id, 'checkpoint')).toBe(true);
        const read = await t.store.getCheckpoint(t.scope, cp.id);
        expect(read?.channels).toEqual(channelsAt(i));
        expect(read).toEqual(cp);
      }
      expect(await t.store.latestCheckpoint(t.scope, run)).toEqual(written[8]);
    });

    it('latest is the most recently written, even within one millisecond', async () => {
      const run = `run-${uniqueKey()}`;
      const written = await writeRun(run, 5);
      expect((await t.store.latestCheckpoint(t.scope, run))?.id).toBe(written[4]?.id);
      const extra = await t.store.putCheckpoint(t.scope, { run_id: run, step: 0, channels: { back: true } });
      expect((await t.store.latestCheckpoint(t.scope, run))?.id).toBe(extra.id);
      expect(await t.store.latestCheckpoint(t.scope, `run-${uniqueKey()}`)).toBeNull();
    });

    it('lists history newest first and pages back with before', async () => {
      const run = `run-${uniqueKey()}`;
      const written = await writeRun(run, 7);
      const newestFirst = ids(written).reverse();
      const all = await t.store.listCheckpoints(t.scope, run);
      expect(ids(all.items)).toEqual(newestFirst);
      expect(all.next_cursor).toBeNull();
      const seen: string[] = [];
      let before: string | null = null;
      let pages = 0;
      do {
        const page = await t.store.listCheckpoints(t.scope, run, { limit: 3, before });
        seen.push(...ids(page.items));
        before = page.next_cursor;
        pages++;
      } while (before !== null && pages < 10);
      expect(seen).toEqual(newestFirst);
      expect(pages).toBe(3);
      const older = await t.store.listCheckpoints(t.scope, run, { before: written[2]!.id });
      expect(ids(older.items)).toEqual([written[1]!.id, written[0]!.id]);
      for (const cp of all.items) expect(cp.channels).toEqual(channelsAt(cp.step));
    });

    it('pages with next_cursor passed back as cursor, as every list does; refuses what it cannot use', async () => {
      const run = `run-${uniqueKey()}`;
      const written = await writeRun(run, 5);
      const seen: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const page = await t.store.listCheckpoints(t.scope, run, { limit: 2, cursor });
        seen.push(...ids(page.items));
        cursor = page.next_cursor;
        pages++;
      } while (cursor !== null && pages < 10);
      expect(seen).toEqual(ids(written).reverse());
      expect(pages).toBe(3);
      const same = written[3]!.id;
      expect(
        ids((await t.store.listCheckpoints(t.scope, run, { before: same, cursor: same })).items),
      ).toHaveLength(3);
      await expectInvalid(
        t.store,
        t.store.listCheckpoints(t.scope, run, { before: written[3]!.id, cursor: written[2]!.id }),
        'before and cursor',
      );
      await expectInvalid(
        t.store,
        t.store.listCheckpoints(t.scope, run, { after: written[1]!.id } as never),
        'query.after is not a field',
      );
    });

    it('prune keeps the newest N, and they still read back intact', async () => {
      const run = `run-${uniqueKey()}`;
      const written = await writeRun(run, 10);
      const other = `run-${uniqueKey()}`;
      const untouched = await writeRun(other, 2);
      expect(await t.store.pruneCheckpoints(t.scope, run, 3)).toBe(7);
      const left = await t.store.listCheckpoints(t.scope, run);
      expect(ids(left.items)).toEqual([written[9]!.id, written[8]!.id, written[7]!.id]);
      for (const cp of left.items) expect(cp.channels).toEqual(channelsAt(cp.step));
      for (const cp of written.slice(0, 7)) expect(await t.store.getCheckpoint(t.scope, cp.id)).toBeNull();
      expect(await t.store.pruneCheckpoints(t.scope, run, 3)).toBe(0);
      expect((await t.store.listCheckpoints(t.scope, other)).items).toEqual(untouched.reverse());
      const next = await t.store.putCheckpoint(t.scope, { run_id: run, step: 10, channels: channelsAt(10) });
      expect((await t.store.getCheckpoint(t.scope, next.id))?.channels).toEqual(channelsAt(10));
    });

    it('a run of one user is not the run of another user with the same run id', async () => {
      const run = `run-${uniqueKey()}`;
      await writeRun(run, 2);
      const theirs = await t.store.putCheckpoint(t.neighbour, {
        run_id: run,
        step: 0,
        channels: { who: 'n' },
      });
      expect((await t.store.latestCheckpoint(t.neighbour, run))?.id).toBe(theirs.id);
      expect((await t.store.listCheckpoints(t.neighbour, run)).items).toHaveLength(1);
      expect(await t.store.pruneCheckpoints(t.neighbour, run, 0)).toBe(1);
      expect((await t.store.listCheckpoints(t.scope, run)).items).toHaveLength(2);
    });

    it('refuses bad input', async () => {
      const s = t.store;
      const run = `run-${uniqueKey()}`;
      await expectInvalid(s, s.putCheckpoint(t.scope, { run_id: '', step: 0, channels: {} }), 'run_id');
      await expectInvalid(s, s.putCheckpoint(t.scope, { run_id: run, step: -1, channels: {} }), 'step');
      await expectInvalid(s, s.putCheckpoint(t.scope, { run_id: run, step: 0.5, channels: {} }), 'step');
      await expectInvalid(
        s,
        s.putCheckpoint(t.scope, { run_id: run, step: 0, channels: [] as never }),
        'channels',
      );
      await expectInvalid(
        s,
        s.putCheckpoint(t.scope, { run_id: run, step: 0, channels: {}, parent_id: 'x' }),
        'parent_id',
      );
      await expectInvalid(
        s,
        s.putCheckpoint(t.scope, { run_id: run, step: 0, channels: {}, id: newId('run') }),
        'id',
      );
      expect(await s.latestCheckpoint(t.scope, run)).toBeNull();
      await expectInvalid(s, s.listCheckpoints(t.scope, run, { limit: 0 }), 'limit');
      await expectInvalid(s, s.listCheckpoints(t.scope, run, { limit: 501 }), 'limit');
      await expectInvalid(s, s.pruneCheckpoints(t.scope, run, -1), 'keep');
      await expectInvalid(s, s.pruneCheckpoints(t.scope, run, 1.5), 'keep');
      await expectInvalid(s, s.getCheckpoint(t.scope, newId('task')));
    });
  });
}
