/**
 * node --import tsx src/testing/conformance/child/begin-actions.ts <url> <tenant> <user> <taskId> <keyPrefix> <n>
 *
 * Begins actions with keys <keyPrefix>-0 .. <keyPrefix>-(n-1) and prints {"ids": [...], "created": c}.
 */
import { openStore } from '../../../store/open.js';
import { args, readyThenWait, report } from './common.js';

const [url, tenant_id, user_id, task_id, prefix, count] = args(
  6,
  'begin-actions.ts <url> <tenant> <user> <taskId> <keyPrefix> <n>',
) as [string, string, string, string, string, string];
const scope = { tenant_id, user_id };
const store = await openStore(url);
await readyThenWait();
const ids: string[] = [];
let created = 0;
for (let i = 0; i < Number(count); i++) {
  const result = await store.beginAction(scope, {
    task_id,
    type: 'tool_call',
    tool: 'deploy',
    params: { pid: process.pid },
    idempotency_key: `${prefix}-${i}`,
  });
  ids.push(result.action.id);
  if (result.created) created++;
}
await store.close();
report({ ids, created });
