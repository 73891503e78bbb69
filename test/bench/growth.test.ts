/** The growth benchmark on real stores, small: a level per size asked, turns timed at each, a readable table. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { growthBenchMarkdown, runGrowthBench } from '../../src/bench/growth/bench.js';
import { openStore } from '../../src/store/open.js';

const dir = mkdtempSync(join(tmpdir(), 'agentstate-growth-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('growth benchmark', () => {
  for (const url of ['memory:', `sqlite:${join(dir, 'growth.db')}`]) {
    it(`times turns at each size of the history (${url.split(':')[0]})`, async () => {
      const store = await openStore(url);
      try {
        const result = await runGrowthBench({
          store,
          label: url.split(':')[0] as string,
          messageLevels: [0, 150],
          taskLevels: [0, 30],
          turns: 3,
        });
        const [messages, tasks] = result.axes;
        expect(messages?.levels.map((level) => level.size)).toEqual([0, 150]);
        expect(tasks?.levels.map((level) => level.size)).toEqual([0, 30]);
        for (const axis of result.axes) {
          expect(axis.growth_p50).toBeGreaterThan(0);
          for (const level of axis.levels) {
            expect(level.turns).toBe(3);
            expect(level.p95_ms).toBeGreaterThanOrEqual(level.p50_ms);
          }
        }
        const finished = await store.listTasks(
          { tenant_id: `growth-${result.store}`, user_id: 'booker' },
          { state: ['DONE', 'CANCELLED'], limit: 100 },
        );
        expect(finished.items).toHaveLength(30);
        const table = growthBenchMarkdown([result], 'now');
        expect(table).toContain(`| ${result.store} | messages | 150 | 3 |`);
        expect(table).toContain(`| ${result.store} | finished_tasks |`);
      } finally {
        await store.close();
      }
    });
  }
});
