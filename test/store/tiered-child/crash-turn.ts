/**
 * node --import tsx test/store/tiered-child/crash-turn.ts <url> <tenant> <user> <sessionId> <taskId>
 * Commits a turn (session patch, task INIT -> COLLECTING, a message) and kills itself (SIGKILL) right
 * after the PostgreSQL commit, before the Redis write. Its session turn lock lives 1 s.
 */
import { openTieredStore } from '../../../src/store/tiered/index.js';

const [url, tenant_id, user_id, sessionId, taskId] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
  string,
];
const store = await openTieredStore(url, {
  turnLockMs: 1000,
  afterDurableCommit: () => {
    process.kill(process.pid, 'SIGKILL');
  },
});
await store.commitTurn(
  { tenant_id, user_id },
  {
    session: { id: sessionId, expected_version: 1, patch: { context: { turn: 2 } } },
    update_tasks: [{ id: taskId, expected_version: 1, patch: { state: 'COLLECTING' } }],
    messages: { session_id: sessionId, items: [{ role: 'assistant', content: 'never stored' }] },
  },
);
process.stderr.write('the turn completed: the crash hook did not run\n');
process.exit(1);
