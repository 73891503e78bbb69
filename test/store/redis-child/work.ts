/**
 * node --import tsx test/store/redis-child/work.ts <increment|begin> <url> <tenant> <user> <taskId> <n>
 *
 * Prints `ready`, waits for a line on stdin, then either does n read-modify-write increments of
 * task.data.counter (retrying on version_conflict) and prints {"done", "conflicts"}, or begins actions
 * with the idempotency keys `key-0` .. `key-<n-1>` and prints {"ids", "created"}.
 */
import { createInterface } from 'node:readline';
import { isAgentStateError } from '../../../src/core/errors.js';
import { openStore } from '../../../src/store/open.js';

const [mode, url, tenant_id, user_id, taskId, arg] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
  string,
  string,
];
const scope = { tenant_id, user_id };
const store = await openStore(url);
process.stdout.write('ready\n');
const lines = createInterface({ input: process.stdin });
await new Promise<void>((resolve) => lines.once('line', () => resolve()));
lines.close();

let result: unknown;
if (mode === 'increment') {
  let conflicts = 0;
  for (let done = 0; done < Number(arg); ) {
    const task = await store.getTask(scope, taskId);
    if (task === null) throw new Error(`task ${taskId} not found`);
    const counter = typeof task.data.counter === 'number' ? task.data.counter : 0;
    try {
      await store.updateTask(scope, taskId, task.version, { data: { counter: counter + 1 } });
      done++;
    } catch (error) {
      if (!isAgentStateError(error, 'version_conflict')) throw error;
      conflicts++;
    }
  }
  result = { done: Number(arg), conflicts };
} else {
  const ids: string[] = [];
  let created = 0;
  for (let i = 0; i < Number(arg); i++) {
    const input = { task_id: taskId, type: 'tool_call', params: {}, idempotency_key: `key-${i}` };
    const begun = await store.beginAction(scope, input);
    ids.push(begun.action.id);
    if (begun.created) created++;
  }
  result = { ids, created };
}
await store.close();
process.stdout.write(`${JSON.stringify(result)}\n`);
