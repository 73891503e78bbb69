/** One task: its state machine with the path taken, slots, status line, transitions and actions. */

import { ActionsTable } from './actions.jsx';
import { client } from './api.js';
import { clock, dateTime } from './format.js';
import { usePoll } from './hooks.js';
import { TaskState } from './task-state.jsx';
import { Empty, ErrorNote, Section, SessionLink } from './ui.jsx';

async function loadTask(id) {
  const [task, events, actions] = await Promise.all([
    client.tasks.get(id),
    client.tasks.events(id),
    client.tasks.actions(id, { limit: 500 }),
  ]);
  return { task, events: events.items, actions: actions.items };
}

export function TaskView({ id }) {
  const { data, error, refresh } = usePoll(() => loadTask(id), id);
  if (!data) return error ? <ErrorNote error={error} /> : <p class="muted">Loading task…</p>;
  const { task, events, actions } = data;
  return (
    <div class="task-view">
      <nav class="crumbs" aria-label="Breadcrumb">
        <a href="#/">Sessions</a>
        {task.session_id ? (
          <>
            {' / '}
            <SessionLink id={task.session_id} />
          </>
        ) : null}
        {' / '}
        <span class="mono">{task.id}</span>
      </nav>
      <ErrorNote error={error} />
      <Section title={`Task ${task.type}`} id="task-title">
        <TaskState task={task} events={events} link={false} />
        <p class="muted">
          Created {dateTime(task.created_at)} · updated {dateTime(task.updated_at)}
          {task.closed_at ? ` · closed ${dateTime(task.closed_at)}` : ''}
        </p>
      </Section>
      <Section title="Transitions" id="events-title">
        {events.length === 0 ? (
          <Empty>No transitions.</Empty>
        ) : (
          <ol class="events" data-testid="events">
            {events.map((e) => (
              <li key={e.id}>
                <span class="mono">{clock(e.at)}</span> <strong>{e.from_state ?? '∅'}</strong> →{' '}
                <strong>{e.to_state}</strong> <span class="muted">v{e.task_version}</span> — {e.cause}
              </li>
            ))}
          </ol>
        )}
      </Section>
      <Section title="Actions" id="actions-title">
        <ActionsTable actions={actions} onResolved={refresh} />
      </Section>
    </div>
  );
}
