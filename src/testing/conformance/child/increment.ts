/**
 * node --import tsx src/testing/conformance/child/increment.ts <url> <tenant> <user> <taskId> <n>
 *
 * Does n read-modify-write increments of task.data.counter, each naming the version it read and retrying on
 * version_conflict. Prints {"done": n, "conflicts": c}.
 */
import { isAgentStateError } from '../../../core/errors.js';
import { openStore } from '../../../store/open.js';
import { args, readyThenWait, report } from './common.js';

const [url, tenant_id, user_id, taskId, count] = args(
  5,
  'increment.ts <url> <tenant> <user> <taskId> <n>',
) as [string, string, string, string, string];
const scope = { tenant_id, user_id };
const store = await openStore(url);
await readyThenWait();
let conflicts = 0;
for (let done = 0; done < Number(count); ) {
  const task = await store.getTask(scope, taskId);
  if (task === null) throw new Error(`task ${taskId} not found`);
  const counter = typeof task.data.counter === 'number' ? task.data.counter : 0;
  try {
    await store.updateTask(scope, taskId, task.version, { data: { ...task.data, counter: counter + 1 } });
    done++;
  } catch (error) {
    if (!isAgentStateError(error, 'version_conflict')) throw error;
    conflicts++;
  }
}
await store.close();
report({ done: Number(count), conflicts });
