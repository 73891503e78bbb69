/**
 * Long checkpoint histories, the case that delta storage must get right: a channel that grows by appends
 * for many steps (past any chain-depth cap), arrays that shrink and grow again from an older base, an
 * element that changes in place, identical values in two runs, and prune removing the checkpoints whose
 * writes the kept ones were built upon. Every kept checkpoint must read back exactly as written.
 */
import { describe, expect, it } from 'vitest';
import type { JsonObject, JsonValue } from '../../core/json.js';
import type { Checkpoint } from '../../core/model.js';
import type { Ctx } from './context.js';
import { uniqueKey } from './fixtures.js';

function message(k: number): JsonValue {
  return {
    role: k % 2 ? 'assistant' : 'user',
    content: `message ${k}, with "quotes", commas [1,2] and ünïcode`,
  };
}

/** Step i: a log growing by one, a list growing by two, a counter, a value that flips back and forth. */
function stepChannels(i: number): JsonObject {
  return {
    log: Array.from({ length: i + 1 }, (_, k) => message(k)),
    pairs: Array.from({ length: 2 * i }, (_, k) => [k, `${k}`]),
    counter: i,
    flip: i % 2 === 0 ? { side: 'left', list: [1, 2, 3] } : { side: 'right', list: [] },
  };
}

export function checkpointHistoryTests(t: Ctx): void {
  async function put(run: string, step: number, channels: JsonObject): Promise<Checkpoint> {
    return t.store.putCheckpoint(t.scope, { run_id: run, step, channels });
  }

  describe('checkpoint histories', () => {
    it('40 steps of growing arrays read back exactly, newest and oldest alike', {
      timeout: 60_000,
    }, async () => {
      const run = `run-${uniqueKey()}`;
      const written: Checkpoint[] = [];
      for (let i = 0; i < 40; i++) written.push(await put(run, i, stepChannels(i)));
      for (const i of [0, 1, 15, 16, 17, 18, 33, 39]) {
        expect((await t.store.getCheckpoint(t.scope, written[i]!.id))?.channels).toEqual(stepChannels(i));
      }
      const page = await t.store.listCheckpoints(t.scope, run, { limit: 40 });
      expect(page.items.map((cp) => cp.step)).toEqual(Array.from({ length: 40 }, (_, i) => 39 - i));
      for (const cp of page.items) expect(cp.channels).toEqual(stepChannels(cp.step));
    });

    it('what a caller changes after writing or reading a step changes no stored step', async () => {
      const run = `run-${uniqueKey()}`;
      const grown = () => ({
        ...stepChannels(3),
        log: [...(stepChannels(3).log as JsonValue[]), message(9)],
      });
      // The second step is made of the first one's objects, as a graph's next state is.
      const first = stepChannels(3);
      const second: JsonObject = { ...first, log: [...(first.log as JsonValue[]), message(9)] };
      const a = await put(run, 0, first);
      const b = await put(run, 1, second);
      const change = (channels: JsonObject) => {
        ((channels.log as JsonObject[])[0] as JsonObject).content = 'changed';
        (channels.pairs as JsonValue[]).push(['x', 'y']);
        (channels.flip as JsonObject).side = 'up';
        channels.counter = -1;
      };
      change(first);
      const readA = await t.store.getCheckpoint(t.scope, a.id);
      const readB = await t.store.latestCheckpoint(t.scope, run);
      change(readA?.channels as JsonObject);
      change(readB?.channels as JsonObject);
      const history = await t.store.listCheckpoints(t.scope, run, { limit: 2 });
      for (const cp of history.items) change(cp.channels);
      expect((await t.store.getCheckpoint(t.scope, a.id))?.channels).toEqual(stepChannels(3));
      expect((await t.store.getCheckpoint(t.scope, b.id))?.channels).toEqual(grown());
      expect((await t.store.latestCheckpoint(t.scope, run))?.channels).toEqual(grown());
    });

    it('prune keeps the newest N intact even when they were written as appends to pruned ones', async () => {
      const run = `run-${uniqueKey()}`;
      const written: Checkpoint[] = [];
      for (let i = 0; i < 25; i++) written.push(await put(run, i, stepChannels(i)));
      expect(await t.store.pruneCheckpoints(t.scope, run, 2)).toBe(23);
      for (const cp of written.slice(23)) {
        expect((await t.store.getCheckpoint(t.scope, cp.id))?.channels).toEqual(stepChannels(cp.step));
      }
      expect((await t.store.latestCheckpoint(t.scope, run))?.channels).toEqual(stepChannels(24));
      const next = await put(run, 25, stepChannels(25));
      expect((await t.store.getCheckpoint(t.scope, next.id))?.channels).toEqual(stepChannels(25));
      expect(await t.store.pruneCheckpoints(t.scope, run, 1)).toBe(2);
      expect((await t.store.latestCheckpoint(t.scope, run))?.channels).toEqual(stepChannels(25));
    });

    it('arrays that shrink, change an element, and grow again from an older base', async () => {
      const run = `run-${uniqueKey()}`;
      const a = ['a'];
      const shapes: JsonValue[][] = [
        a,
        ['a', 'b'],
        ['a', 'b', 'c'],
        ['a', 'b'],
        ['a', 'b', 'c'],
        ['a', 'b', 'C'],
        ['a', 'b', 'C', 'd'],
        [],
        ['x'],
        ['a', 'b', 'c', 'd', 'e'],
        ['a', 'b', 'c', 'd', 'e'],
        [['a'], { b: ['c'] }],
        [['a'], { b: ['c'] }, null],
      ];
      const written: Checkpoint[] = [];
      for (const [i, list] of shapes.entries()) written.push(await put(run, i, { list }));
      for (const [i, cp] of written.entries()) {
        expect((await t.store.getCheckpoint(t.scope, cp.id))?.channels).toEqual({ list: shapes[i] });
      }
    });

    it('a channel that changes type, disappears and comes back', async () => {
      const run = `run-${uniqueKey()}`;
      const steps: JsonObject[] = [
        { c: [1, 2] },
        { c: { 0: 1, 1: 2 } },
        { c: '1,2' },
        {},
        { c: [1, 2] },
        { c: [1, 2, 3], d: null },
        { d: [] },
        { c: [1, 2, 3, 4], d: [[]] },
      ];
      const written: Checkpoint[] = [];
      for (const [i, channels] of steps.entries()) written.push(await put(run, i, channels));
      for (const [i, cp] of written.entries()) {
        expect((await t.store.getCheckpoint(t.scope, cp.id))?.channels).toEqual(steps[i]);
      }
    });

    it('identical channels in two runs: pruning one run leaves the other intact', async () => {
      const first = `run-${uniqueKey()}`;
      const second = `run-${uniqueKey()}`;
      const kept: Checkpoint[] = [];
      for (let i = 0; i < 6; i++) {
        await put(first, i, stepChannels(i));
        kept.push(await put(second, i, stepChannels(i)));
      }
      expect(await t.store.pruneCheckpoints(t.scope, first, 0)).toBe(6);
      expect(await t.store.latestCheckpoint(t.scope, first)).toBeNull();
      for (const cp of kept) {
        expect((await t.store.getCheckpoint(t.scope, cp.id))?.channels).toEqual(stepChannels(cp.step));
      }
    });

    it('the same run id of two users does not share stored values', async () => {
      const run = `run-${uniqueKey()}`;
      for (let i = 0; i < 4; i++) await put(run, i, stepChannels(i));
      const theirs = await t.store.putCheckpoint(t.neighbour, {
        run_id: run,
        step: 4,
        channels: stepChannels(4),
      });
      expect(await t.store.pruneCheckpoints(t.scope, run, 0)).toBe(4);
      expect((await t.store.getCheckpoint(t.neighbour, theirs.id))?.channels).toEqual(stepChannels(4));
    });
  });
}
