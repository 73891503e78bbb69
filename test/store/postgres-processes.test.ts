/** Three OS processes increment one task through the PostgreSQL store: no update is lost. */
import { afterAll, expect, it } from 'vitest';
import { openPostgresStore } from '../../src/store/postgres/index.js';
import { child, runTogether } from './child/run.js';
import { dropSchema, randomSchema, schemaUrl } from './postgres-env.js';

const schema = randomSchema();
const url = schemaUrl(schema);
afterAll(() => dropSchema(schema));

it('3 processes x 200 read-modify-write increments = 600 exactly', async () => {
  const store = await openPostgresStore({ url });
  const scope = { tenant_id: `t_${schema}`, user_id: 'u' };
  const task = await store.createTask(scope, { type: 'counter', data: { counter: 0 } });
  const results = (await runTogether(
    [1, 2, 3].map(() => child('increment.ts', [url, scope.tenant_id, scope.user_id, task.id, '200'])),
  )) as { done: number; conflicts: number }[];
  expect(results.map((r) => r.done)).toEqual([200, 200, 200]);
  const after = await store.getTask(scope, task.id);
  expect(after?.data.counter).toBe(600);
  expect(after?.version).toBe(601);
  await store.close();
}, 120_000);
