/**
 * One session: header (status, user, agent, model, expiry countdown), the chat with the task state beside it,
 * the timeline, and the context the model would see now.
 */
import { useState } from 'preact/hooks';
import { AgentStateHttpError, all, client } from './api.js';
import { Chat } from './chat.jsx';
import { ago, countdown, dateTime } from './format.js';
import { useNow, usePoll } from './hooks.js';
import { TaskState } from './task-state.jsx';
import { buildTimeline, Timeline } from './timeline.jsx';
import { Badge, Empty, ErrorNote, Section } from './ui.jsx';

async function checkpointsOf(id) {
  try {
    return await all((page) => client.sessions.checkpoints(id, page), 200);
  } catch (error) {
    // A server without the agent runtime has no checkpoint history (501): the rest still shows.
    if (error instanceof AgentStateHttpError && error.status === 501) return [];
    throw error;
  }
}

async function loadSession(id) {
  const [session, messages, taskList, checkpoints] = await Promise.all([
    client.sessions.get(id),
    all((page) => client.messages.list(id, page), 1000),
    client.tasks.list({ session_id: id, limit: 100 }),
    checkpointsOf(id),
  ]);
  const tasks = await Promise.all(
    taskList.items.map(async (task) => {
      const [events, actions] = await Promise.all([
        client.tasks.events(task.id),
        client.tasks.actions(task.id, { limit: 500 }),
      ]);
      return { task, events: events.items, actions: actions.items };
    }),
  );
  return { session, messages, tasks, checkpoints };
}

/** `POST /v1/sessions/{id}/resume`: finishes a run that stopped (a crash), recovering its PENDING actions. */
function ResumeButton({ id, onDone }) {
  const [state, setState] = useState({ busy: false, error: null, reply: null });
  const resume = async () => {
    setState({ busy: true, error: null, reply: null });
    try {
      const out = await client.sessions.resume(id);
      setState({ busy: false, error: null, reply: out.reply });
    } catch (error) {
      setState({ busy: false, error, reply: null });
    }
    onDone();
  };
  return (
    <span class="resume">
      <button type="button" onClick={resume} disabled={state.busy}>
        {state.busy ? 'Resuming…' : 'Resume interrupted run'}
      </button>
      {state.reply ? (
        <span class="muted" role="status">
          {' '}
          Resumed: {state.reply}
        </span>
      ) : null}
      <ErrorNote error={state.error} />
    </span>
  );
}

function Context({ id }) {
  const { data, error } = usePoll(() => client.sessions.context(id), `ctx-${id}`);
  return (
    <Section title="Context the model would see now" id="context-title">
      <ErrorNote error={error} />
      {data ? (
        <div data-testid="context">
          <p class="muted">
            {data.token_count} tokens{data.model ? ` · model ${data.model}` : ''}
          </p>
          <details>
            <summary>System prompt</summary>
            <pre class="pre">{data.system}</pre>
          </details>
          <ol class="ctx-messages">
            {data.messages.map((m, i) => (
              <li key={i}>
                <span class={`role role-${m.role}`}>{m.role}</span> {m.content}
              </li>
            ))}
          </ol>
        </div>
      ) : null}
    </Section>
  );
}

export function SessionView({ id }) {
  const now = useNow();
  const { data, error, refresh } = usePoll(() => loadSession(id), id);
  if (!data) return error ? <ErrorNote error={error} /> : <p class="muted">Loading session…</p>;
  const { session, messages, tasks } = data;
  const ordered = [...tasks].sort((a, b) => b.task.updated_at.localeCompare(a.task.updated_at));
  return (
    <div class="session-view">
      <nav class="crumbs" aria-label="Breadcrumb">
        <a href="#/">Sessions</a> / <span class="mono">{session.id}</span>
      </nav>
      <ErrorNote error={error} />
      <header class="session-head panel" data-testid="session-head">
        <Badge value={session.status} />
        <span>
          user <strong>{session.user_id}</strong>
        </span>
        <span>
          agent <strong>{session.agent ?? '—'}</strong>
        </span>
        {session.model ? (
          <span data-testid="session-model">
            model <strong>{session.model}</strong>
          </span>
        ) : null}
        <span title={session.last_activity_at}>last activity {ago(session.last_activity_at, now)}</span>
        <span title={session.expires_at}>
          expires in <strong class="mono">{countdown(session.expires_at, now)}</strong> (TTL{' '}
          {session.ttl_seconds}s, sliding)
        </span>
        <span class="muted">created {dateTime(session.created_at)}</span>
        {session.agent ? <ResumeButton id={session.id} onDone={refresh} /> : null}
      </header>
      <div class="split">
        <Section title="Chat" id="chat-title">
          <Chat session={session} messages={messages} onTurn={refresh} />
        </Section>
        <Section title="Tasks" id="tasks-title">
          {ordered.length === 0 ? (
            <Empty>No task yet.</Empty>
          ) : (
            ordered.map(({ task, events }) => <TaskState key={task.id} task={task} events={events} />)
          )}
        </Section>
      </div>
      <Section title="Timeline" id="timeline-title">
        <Timeline entries={buildTimeline(data)} />
      </Section>
      <Context id={id} />
    </div>
  );
}
