/**
 * Needs attention: tool calls waiting for a person's approval (with Approve and Deny), every UNKNOWN
 * action (with the form to resolve it), every task it blocks, other PENDING actions older than a minute (a
 * run that may have crashed: resume its session) and FAILED tasks.
 */

import { ActionsTable } from './actions.jsx';
import { client } from './api.js';
import { ApprovalList, waitsForApproval } from './approval.jsx';
import { ago } from './format.js';
import { useNow, usePoll } from './hooks.js';
import { Badge, Empty, ErrorNote, Section, SessionLink, TaskLink } from './ui.jsx';

const STUCK_MS = 60_000;

async function loadAttention() {
  const [unknown, pending, failed] = await Promise.all([
    client.actions.list({ status: 'UNKNOWN', limit: 500 }),
    client.actions.list({ status: 'PENDING', limit: 500 }),
    client.tasks.list({ state: 'FAILED', limit: 100 }),
  ]);
  const taskIds = [...new Set(unknown.items.map((a) => a.task_id))];
  const blocked = (await Promise.all(taskIds.map((id) => client.tasks.get(id).catch(() => null)))).filter(
    (task) => task !== null,
  );
  const approvals = pending.items.filter(waitsForApproval);
  const running = pending.items.filter((a) => !waitsForApproval(a));
  return { unknown: unknown.items, approvals, pending: running, failed: failed.items, blocked };
}

function TaskRows({ tasks, now }) {
  return (
    <ul class="task-rows">
      {tasks.map((t) => (
        <li key={t.id} data-task={t.id}>
          <TaskLink id={t.id}>{t.type}</TaskLink> <Badge value={t.state} kind="state" />{' '}
          {t.session_id ? <SessionLink id={t.session_id} /> : null} <span class="user-id">{t.user_id}</span>{' '}
          <span class="muted">{ago(t.updated_at, now)}</span>
          <div class="status-line">{t.status_line}</div>
        </li>
      ))}
    </ul>
  );
}

export function AttentionView() {
  const now = useNow();
  const { data, error, refresh } = usePoll(loadAttention, 'attention-view');
  if (!data) return error ? <ErrorNote error={error} /> : <p class="muted">Loading…</p>;
  const stuck = data.pending.filter((a) => now - Date.parse(a.updated_at) > STUCK_MS);
  return (
    <div class="attention">
      <ErrorNote error={error} />
      <Section title={`Waiting for approval (${data.approvals.length})`} id="approvals-title">
        <p class="muted">
          Tool calls of chats that wait for a person. The decision is recorded at once; the chat carries it
          out when it continues.
        </p>
        {data.approvals.length === 0 ? (
          <Empty>No tool call waits for approval.</Empty>
        ) : (
          <ApprovalList actions={data.approvals} now={now} onDone={refresh} />
        )}
      </Section>
      <Section title={`UNKNOWN actions (${data.unknown.length})`} id="unknown-title">
        <p class="muted">
          The downstream may or may not have done these. Check it, then resolve: the blocked task continues on
          the session's next turn.
        </p>
        {data.unknown.length === 0 ? (
          <Empty>Nothing is UNKNOWN.</Empty>
        ) : (
          <ActionsTable actions={data.unknown} onResolved={refresh} showTask />
        )}
      </Section>
      <Section title={`Blocked tasks (${data.blocked.length})`} id="blocked-title">
        {data.blocked.length === 0 ? (
          <Empty>No task is blocked.</Empty>
        ) : (
          <TaskRows tasks={data.blocked} now={now} />
        )}
      </Section>
      <Section title={`PENDING for over a minute (${stuck.length})`} id="stuck-title">
        <p class="muted">A run may have stopped during these calls: resuming the session recovers them.</p>
        {stuck.length === 0 ? <Empty>None.</Empty> : <ActionsTable actions={stuck} showTask />}
      </Section>
      <Section title={`Failed tasks (${data.failed.length})`} id="failed-title">
        {data.failed.length === 0 ? <Empty>None.</Empty> : <TaskRows tasks={data.failed} now={now} />}
      </Section>
    </div>
  );
}
