import { describe, expect, it } from 'vitest';
import { rulesSummarizer } from '../../src/context/summarizer.js';
import { msg } from './fixtures.js';

describe('rules summarizer (extractive)', () => {
  const messages = [
    msg(1, 'user', 'Hello there. I want to fly from Beijing to Tokyo on 3 May. Thanks!'),
    msg(2, 'assistant', 'Sure. Which cabin would you like?'),
    msg(3, 'user', 'Business class, please.'),
    msg(4, 'assistant', '', {
      tool_calls: [{ id: 'c1', name: 'airline.search', arguments: { from: 'PEK', to: 'NRT' } }],
    }),
    msg(5, 'tool', '{"flights":[{"no":"CA925","price":1200}]}', {
      tool_call_id: 'c1',
      name: 'airline.search',
    }),
    msg(6, 'assistant', 'Booked: confirmation code ZX12Q for Li Lei.'),
    msg(7, 'system', 'internal note'),
  ];

  it('picks key sentences, tool calls and results, with their seq', async () => {
    const points = await rulesSummarizer().summarize({ previous: [], messages });
    expect(points).toEqual([
      '[1] user: I want to fly from Beijing to Tokyo on 3 May.',
      '[3] user: Business class, please.',
      '[4] called airline.search {"from":"PEK","to":"NRT"}',
      '[5] airline.search returned: {"flights":[{"no":"CA925","price":1200}]}',
      '[6] assistant: Booked: confirmation code ZX12Q for Li Lei.',
    ]);
  });

  it('is deterministic and rolls: previous points first, only the newest maxPoints kept', async () => {
    const s = rulesSummarizer({ maxPoints: 3 });
    const a = await s.summarize({ previous: ['old 1', 'old 2'], messages });
    const b = await s.summarize({ previous: ['old 1', 'old 2'], messages });
    expect(a).toEqual(b);
    expect(a).toHaveLength(3);
    expect(a[2]).toContain('[6]');
  });

  it('clips long points', async () => {
    const points = await rulesSummarizer({ maxPointChars: 40 }).summarize({
      previous: [],
      messages: [msg(1, 'user', `I need ${'x'.repeat(200)} 42`)],
    });
    expect(points[0]).toHaveLength(40);
    expect(points[0]!.endsWith('…')).toBe(true);
  });
});
