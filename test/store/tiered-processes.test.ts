/** Three OS processes increment one task through the tiered store (hot copies in Redis, versions in PostgreSQL). */
import { afterAll, expect, it } from 'vitest';
import { openStore } from '../../src/store/open.js';
import { child, runTogether } from './child/run.js';
import { tieredEnv } from './tiered-env.js';

const env = tieredEnv();
afterAll(() => env.cleanup());

it('3 processes x 200 read-modify-write increments = 600 exactly', async () => {
  const store = await openStore(env.url);
  expect(store.adapter).toBe('tiered');
  const scope = { tenant_id: `t_${env.schema}`, user_id: 'u' };
  const task = await store.createTask(scope, { type: 'counter', data: { counter: 0 } });
  const results = (await runTogether(
    [1, 2, 3].map(() => child('increment.ts', [env.url, scope.tenant_id, scope.user_id, task.id, '200'])),
  )) as { done: number; conflicts: number }[];
  expect(results.map((r) => r.done)).toEqual([200, 200, 200]);
  const after = await store.getTask(scope, task.id);
  expect(after?.data.counter).toBe(600);
  expect(after?.version).toBe(601);
  // The same answer from PostgreSQL alone (a tenant-wide read never uses the hot copy).
  expect(await store.getTask({ tenant_id: scope.tenant_id }, task.id)).toEqual(after);
  await store.close();
}, 120_000);
