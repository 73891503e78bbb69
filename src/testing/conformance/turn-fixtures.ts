/** What the turn concerns share: a session with two tasks, a pending action and a message; a full batch. */
import type { StateStore, TurnBatch } from '../../store/types.js';
import type { Ctx } from './context.js';
import { action, session, task, uniqueKey } from './fixtures.js';

/** Everything a turn can touch, read back through the API, to compare before and after a failed turn. */
export async function snapshot(
  store: StateStore,
  t: Ctx,
  sessionId: string,
  taskIds: string[],
  runId: string,
) {
  return {
    session: await store.getSession(t.scope, sessionId),
    messages: await store.listMessages(t.scope, sessionId, { limit: 1000 }),
    tasks: await Promise.all(taskIds.map((id) => store.getTask(t.scope, id))),
    events: await Promise.all(taskIds.map((id) => store.listTaskEvents(t.scope, id))),
    allTasks: (await store.listTasks(t.scope, { limit: 500 })).items,
    actions: (await store.listActions(t.scope, { limit: 500 })).items,
    checkpoints: (await store.listCheckpoints(t.scope, runId)).items,
  };
}

/** `setup()` makes the records a turn touches; `fullBatch(x, stale)` touches every one of them. */
export function turnFixtures(t: Ctx) {
  async function setup() {
    const s = await session(t.store, t.scope, 600);
    const a = await task(t.store, t.scope, s.id);
    const b = await task(t.store, t.scope, s.id);
    const pending = await action(t.store, t.scope, a.id);
    await t.store.appendMessages(t.scope, s.id, [{ role: 'user', content: 'first' }]);
    return { s, a, b, pending, run: `run-${uniqueKey()}` };
  }

  function fullBatch(x: Awaited<ReturnType<typeof setup>>, stale: 'none' | 'session' | 'task'): TurnBatch {
    return {
      session: {
        id: x.s.id,
        expected_version: stale === 'session' ? 99 : x.s.version,
        patch: { context: { turn: 2 } },
      },
      create_tasks: [{ type: 'hotel', session_id: x.s.id, slots: { city: 'Lisbon' } }],
      update_tasks: [
        {
          id: x.a.id,
          expected_version: 1,
          patch: { state: 'COLLECTING', slots: { from: 'ZRH', to: 'LIS' } },
        },
        { id: x.b.id, expected_version: stale === 'task' ? 7 : 1, patch: { state: 'CANCELLED' } },
      ],
      begin_actions: [{ task_id: x.a.id, type: 'tool_call', params: { q: 1 }, idempotency_key: uniqueKey() }],
      complete_actions: [{ id: x.pending.id, status: 'SUCCESS', result: { ok: true } }],
      messages: {
        session_id: x.s.id,
        items: [
          { role: 'user', content: 'to Lisbon' },
          { role: 'assistant', content: 'When?' },
        ],
      },
      checkpoint: { run_id: x.run, session_id: x.s.id, step: 1, channels: { messages: ['a', 'b'], step: 1 } },
    };
  }

  return { setup, fullBatch };
}
