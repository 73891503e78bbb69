/**
 * node --import tsx test/store/child/increment.ts <url> <tenant> <user> <taskId> <n>
 * n read-modify-write increments of task.data.counter, retrying on version_conflict. Prints {done, conflicts}.
 */
import { isAgentStateError } from '../../../src/core/errors.js';
import { openStore } from '../../../src/store/open.js';
import { readyThenWait } from './run.js';

const [url, tenant_id, user_id, taskId, count] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
  string,
];
const scope = { tenant_id, user_id };
const store = await openStore(url);
await readyThenWait();
let conflicts = 0;
for (let done = 0; done < Number(count); ) {
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
await store.close();
process.stdout.write(`${JSON.stringify({ done: Number(count), conflicts })}\n`);
