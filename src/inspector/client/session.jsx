/**
 * One session: header (status, user, agent, model, expiry countdown, the session it was forked from), the
 * chat with the task state beside it (a call waiting for approval with Approve and Deny), the sessions forked
 * from it, the timeline (each message with Fork here and Rewind here), and the context the model would see now.
 *
 * The view follows the session's live events (live.js): the reply is shown as it streams, and any other
 * event of a run (a task or action change, a message, a checkpoint, the run's end) reloads the view at once.
 * While the stream is up the session is polled only every LIVE_POLL_MS, for what changes outside runs; when
 * it is down, every POLL_MS as before.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { AgentStateHttpError, all, client } from './api.js';
import { TaskApprovals } from './approval.jsx';
import { Branches, ForkedFrom, ForkedTask, forkOriginOf, MessageBranchButtons } from './branches.jsx';
import { Chat } from './chat.jsx';
import { ago, countdown, dateTime } from './format.js';
import { POLL_MS, useNow, usePoll } from './hooks.js';
import { useSessionEvents } from './live.js';
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
  const [session, messages, taskList, checkpoints, branches] = await Promise.all([
    client.sessions.get(id),
    all((page) => client.messages.list(id, page), 1000),
    client.tasks.list({ session_id: id, limit: 100 }),
    checkpointsOf(id),
    client.sessions.branches(id),
  ]);
  const tasks = await Promise.all(
    taskList.items.map(async (task) => {
      const [events, actions, origin] = await Promise.all([
        client.tasks.events(task.id),
        client.tasks.actions(task.id, { limit: 500 }),
        forkOriginOf(task),
      ]);
      return { task, events: events.items, actions: actions.items, origin };
    }),
  );
  return { session, messages, tasks, checkpoints, branches: branches.items };
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

/** The session's polling interval while its live events are followed. */
const LIVE_POLL_MS = Math.max(POLL_MS * 10, 30_000);

/** How long a burst of events is let settle before the view is reloaded once. */
const RELOAD_AFTER_MS = 100;

function Context({ id, ms, tick }) {
  const { data, error, refresh } = usePoll(() => client.sessions.context(id), `ctx-${id}`, ms);
  useEffect(() => {
    if (tick > 0) refresh();
  }, [tick]);
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

/** The stream's state, shown in the session's header. */
function LiveStatus({ state }) {
  const label =
    state === 'live'
      ? 'live'
      : state === 'off'
        ? `stream down: refreshing every ${POLL_MS / 1000} s`
        : 'connecting…';
  return (
    <span class={`live live-${state}`} data-testid="live-status" data-state={state}>
      {label}
    </span>
  );
}

export function SessionView({ id }) {
  const now = useNow();
  // The reply of the run in flight, as it streams: { runId, text }.
  const [streaming, setStreaming] = useState(null);
  const [tick, setTick] = useState(0);
  const reload = useRef(() => undefined);
  const timer = useRef(null);
  const onEvent = (event) => {
    if (event.type === 'run.started') setStreaming({ runId: event.run_id, text: '' });
    if (event.type === 'message.delta') {
      const piece = typeof event.data.text === 'string' ? event.data.text : '';
      setStreaming((s) => ({ runId: event.run_id, text: (s?.runId === event.run_id ? s.text : '') + piece }));
      return;
    }
    clearTimeout(timer.current);
    timer.current = setTimeout(() => {
      reload.current();
      setTick((t) => t + 1);
    }, RELOAD_AFTER_MS);
  };
  useEffect(() => () => clearTimeout(timer.current), []);
  const stream = useSessionEvents(id, onEvent);
  const ms = stream === 'live' ? LIVE_POLL_MS : POLL_MS;
  const { data, error, refresh } = usePoll(() => loadSession(id), id, ms);
  reload.current = refresh;
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
        <ForkedFrom session={session} />
        {session.agent ? <ResumeButton id={session.id} onDone={refresh} /> : null}
        <LiveStatus state={stream} />
      </header>
      <div class="split">
        <Section title="Chat" id="chat-title">
          <Chat session={session} messages={messages} streaming={streaming} onTurn={refresh} />
        </Section>
        <Section title="Tasks" id="tasks-title">
          {ordered.length === 0 ? (
            <Empty>No task yet.</Empty>
          ) : (
            ordered.map(({ task, events, actions, origin }) => (
              <TaskState key={task.id} task={task} events={events}>
                <TaskApprovals actions={actions} onDone={refresh} />
                <ForkedTask origin={origin} />
              </TaskState>
            ))
          )}
        </Section>
      </div>
      <Section title={`Branches (${data.branches.length})`} id="branches-title">
        <Branches items={data.branches} />
      </Section>
      <Section title="Timeline" id="timeline-title">
        <Timeline
          entries={buildTimeline(data)}
          messageTools={(message) => (
            <MessageBranchButtons
              session={session}
              message={message}
              lastSeq={messages.at(-1)?.seq ?? 0}
              onRewound={() => {
                refresh();
                setTick((t) => t + 1);
              }}
            />
          )}
        />
      </Section>
      <Context id={id} ms={ms} tick={tick} />
    </div>
  );
}
