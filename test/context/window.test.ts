import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { arrayMessageSource } from '../../src/context/source.js';
import { selectWindow } from '../../src/context/window.js';
import type { Message } from '../../src/core/model.js';
import { lengthCost, msg } from './fixtures.js';

function conversation(): Message[] {
  return [
    msg(1, 'user', 'I want to fly to Tokyo'),
    msg(2, 'assistant', '', {
      tool_calls: [
        { id: 'c1', name: 'search', arguments: { to: 'NRT' } },
        { id: 'c2', name: 'prices', arguments: { to: 'NRT' } },
      ],
    }),
    msg(3, 'tool', 'three flights found', { tool_call_id: 'c1' }),
    msg(4, 'tool', 'from 500 EUR', { tool_call_id: 'c2' }),
    msg(5, 'assistant', 'Found three flights.'),
    msg(6, 'user', 'Book the first'),
  ];
}

const seqs = (list: readonly Message[]) => list.map((m) => m.seq);

describe('selectWindow', () => {
  it('takes everything when it fits', async () => {
    const all = conversation();
    const w = await selectWindow(arrayMessageSource(all), { budget: 10_000, cost: lengthCost });
    expect(seqs(w.messages)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(w.complete).toBe(true);
    expect(w.cut_to).toBeNull();
    expect(w.tokens).toBe(all.reduce((s, m) => s + lengthCost(m), 0));
  });

  it('keeps a tool call and its results together: the results never come without the call', async () => {
    const all = conversation();
    // messages 3..6 cost 20+13+21+15 = 69; message 2 costs 1 more. Budget 69 fits the results but not the call.
    const tail = [3, 4, 5, 6].reduce((s, seq) => s + lengthCost(all[seq - 1]!), 0);
    const w = await selectWindow(arrayMessageSource(all), { budget: tail, cost: lengthCost });
    expect(seqs(w.messages)).toEqual([5, 6]);
    expect(w.messages[0]!.role).not.toBe('tool');
    expect(w.cut_to).toBe(4);
    const whole = await selectWindow(arrayMessageSource(all), { budget: tail + 1, cost: lengthCost });
    expect(seqs(whole.messages)).toEqual([2, 3, 4, 5, 6]);
    expect(whole.cut_to).toBe(1);
  });

  it('respects the budget exactly: a unit costing exactly what is left is taken, one more token is not', async () => {
    const all = conversation();
    const last = lengthCost(all[5]!);
    expect(
      seqs((await selectWindow(arrayMessageSource(all), { budget: last, cost: lengthCost })).messages),
    ).toEqual([6]);
    const none = await selectWindow(arrayMessageSource(all), { budget: last - 1, cost: lengthCost });
    expect(none.messages).toEqual([]);
    expect(none.tokens).toBe(0);
    expect(none.cut_to).toBe(6);
  });

  it('never starts with a tool result whose call is below the floor (covered by a summary)', async () => {
    const w = await selectWindow(arrayMessageSource(conversation()), {
      budget: 10_000,
      cost: lengthCost,
      floor: 2,
    });
    expect(seqs(w.messages)).toEqual([5, 6]);
    expect(w.orphans).toEqual([3, 4]);
    expect(w.complete).toBe(true);
  });

  it('skips a tool result whose call is not right before it, and results that answer another call', async () => {
    const list = [
      msg(1, 'user', 'hi'),
      msg(2, 'tool', 'stray', { tool_call_id: 'zz' }),
      msg(3, 'assistant', '', { tool_calls: [{ id: 'a', name: 'f', arguments: {} }] }),
      msg(4, 'tool', 'ok', { tool_call_id: 'a' }),
      msg(5, 'tool', 'not mine', { tool_call_id: 'b' }),
      msg(6, 'user', 'thanks'),
    ];
    const w = await selectWindow(arrayMessageSource(list), { budget: 10_000, cost: lengthCost });
    expect(seqs(w.messages)).toEqual([1, 3, 4, 6]);
    expect(w.orphans).toEqual([2, 5]);
  });

  it('reads only the pages the window needs, not the history', async () => {
    const history: Message[] = [];
    for (let seq = 1; seq <= 20_000; seq++)
      history.push(msg(seq, seq % 2 ? 'user' : 'assistant', `message ${seq}`));
    const w = await selectWindow(arrayMessageSource(history), {
      budget: 400,
      cost: lengthCost,
      pageSize: 16,
    });
    expect(w.messages.length).toBeGreaterThan(10);
    expect(w.messages[w.messages.length - 1]!.seq).toBe(20_000);
    expect(w.read).toBeLessThan(100);
  });

  it('refuses a negative budget', async () => {
    await expect(
      selectWindow(arrayMessageSource([]), { budget: -1, cost: lengthCost }),
    ).rejects.toMatchObject({
      code: 'invalid_request',
    });
  });
});

/** Random conversations: plain messages, tool units (some with missing or foreign results), stray results. */
const conversationArb = fc
  .array(
    fc.oneof(
      fc.record({
        kind: fc.constant('plain' as const),
        role: fc.constantFrom('user', 'assistant', 'system'),
        len: fc.nat(40),
      }),
      fc.record({
        kind: fc.constant('unit' as const),
        calls: fc.integer({ min: 1, max: 3 }),
        answered: fc.nat(3),
        foreign: fc.boolean(),
        len: fc.nat(40),
      }),
      fc.record({ kind: fc.constant('stray' as const), len: fc.nat(10) }),
    ),
    { maxLength: 40 },
  )
  .map((parts) => {
    const out: Message[] = [];
    let n = 0;
    for (const p of parts) {
      if (p.kind === 'plain') out.push(msg(++n, p.role as Message['role'], 'x'.repeat(p.len)));
      else if (p.kind === 'stray')
        out.push(msg(++n, 'tool', 's'.repeat(p.len), { tool_call_id: `stray${n}` }));
      else {
        const callerSeq = ++n;
        const ids = Array.from({ length: p.calls }, (_, i) => `c${callerSeq}_${i}`);
        out.push(
          msg(callerSeq, 'assistant', '', {
            tool_calls: ids.map((id) => ({ id, name: 'f', arguments: {} })),
          }),
        );
        for (const id of ids.slice(0, p.answered))
          out.push(msg(++n, 'tool', 'r'.repeat(p.len), { tool_call_id: id }));
        if (p.foreign) out.push(msg(++n, 'tool', 'foreign', { tool_call_id: 'nobody' }));
      }
    }
    return out;
  });

describe('selectWindow properties', () => {
  it('the same window whatever the page size; budget kept; contiguous units; no orphan result', async () => {
    await fc.assert(
      fc.asyncProperty(
        conversationArb,
        fc.nat(300),
        fc.integer({ min: 1, max: 8 }),
        fc.nat(5),
        async (all, budget, pageSize, floorPick) => {
          const floor = all.length === 0 ? 0 : floorPick % (all.length + 1);
          const source = arrayMessageSource(all);
          const w = await selectWindow(source, { budget, cost: lengthCost, pageSize, floor });
          const reference = await selectWindow(source, { budget, cost: lengthCost, pageSize: 500, floor });
          expect(seqs(w.messages)).toEqual(seqs(reference.messages));
          expect(w.cut_to).toEqual(reference.cut_to);
          expect(w.tokens).toBe(w.messages.reduce((s, m) => s + lengthCost(m), 0));
          expect(w.tokens).toBeLessThanOrEqual(budget);
          expect(w.messages.every((m) => m.seq > floor)).toBe(true);
          if (w.messages.length > 0) expect(w.messages[0]!.role).not.toBe('tool');
          // every tool result follows its call, inside the window
          w.messages.forEach((m, i) => {
            if (m.role !== 'tool') return;
            let j = i - 1;
            while (j >= 0 && w.messages[j]!.role === 'tool') j--;
            const caller = w.messages[j];
            expect(caller?.tool_calls?.some((c) => c.id === m.tool_call_id)).toBe(true);
          });
          // the window ends at the newest message above the floor that is not an orphan
          const newestSeq = w.messages[w.messages.length - 1]?.seq;
          if (newestSeq !== undefined)
            expect(all.filter((m) => m.seq > newestSeq).every((m) => w.orphans.includes(m.seq))).toBe(true);
          // a call that is kept has all of its answers that follow it kept as well
          for (const m of w.messages) {
            if (!m.tool_calls) continue;
            const answers = all.filter(
              (t) => t.seq > m.seq && t.role === 'tool' && m.tool_calls!.some((c) => c.id === t.tool_call_id),
            );
            const contiguous = answers.filter((t) =>
              all.slice(m.seq, t.seq - 1).every((x) => x.role === 'tool'),
            );
            for (const t of contiguous) expect(seqs(w.messages)).toContain(t.seq);
          }
          expect(w.complete).toBe(w.cut_to === null);
        },
      ),
      { numRuns: 300 },
    );
  });
});
