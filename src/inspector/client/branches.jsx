/**
 * A session's branches: where a fork comes from (with a link to it), the sessions forked from this one
 * (rewinds' branches too), and a message's "Fork here" and "Rewind here" buttons in the timeline.
 *
 * Fork here: `POST /v1/sessions/{id}/fork {at_seq}`, then the page opens the new session. Rewind here, once
 * the person confirms: `POST /v1/sessions/{id}/rewind {at_seq, expected_version}` (the version the page
 * shows: a session changed meanwhile answers 409 and is not rewound), then the view reloads; what came
 * after the message stays readable as a branch.
 *
 * A task a fork copied names, in `data['agentstate.fork']`, the task it was copied from, the actions that had
 * succeeded by the fork point (inherited as done, never run again) and those the original began after it:
 * their effects are in the world though the fork never ran them, so its task card shows them.
 */
import { useState } from 'preact/hooks';
import { AgentStateHttpError, client } from './api.js';
import { dateTime, short, shortId } from './format.js';
import { Badge, Empty, ErrorNote, SessionLink, TaskLink } from './ui.jsx';
import './branches.css';

/** `after message #3`, `before the first message`, and the checkpoint it was asked at. */
function pointOf(origin) {
  const after = origin.seq === 0 ? 'before the first message' : `after message #${origin.seq}`;
  return origin.checkpoint_id ? `${after}, at checkpoint ${origin.checkpoint_id}` : after;
}

/** "forked from <session> after message #N", in the session's header; nothing for a session not forked. */
export function ForkedFrom({ session }) {
  const origin = session.forked_from;
  if (!origin) return null;
  return (
    <span data-testid="forked-from">
      forked from <SessionLink id={origin.session_id} /> <span class="muted">{pointOf(origin)}</span>
    </span>
  );
}

/** The sessions forked from this one, oldest first. */
export function Branches({ items }) {
  if (items.length === 0) {
    return <Empty>No branch. Fork or rewind from a message in the timeline.</Empty>;
  }
  return (
    <ul class="branches" data-testid="branches">
      {items.map((branch) => (
        <li key={branch.id} data-session={branch.id}>
          <SessionLink id={branch.id} /> <Badge value={branch.status} />{' '}
          {branch.forked_from ? <span>{pointOf(branch.forked_from)}</span> : null}{' '}
          <span class="muted">created {dateTime(branch.created_at)}</span>
        </li>
      ))}
    </ul>
  );
}

/** The question a rewind asks before it runs. */
export function rewindQuestion(session, seq) {
  return (
    `Rewind session ${session.id} to message #${seq}? ` +
    'It continues from there; the messages after it move to a new branch (nothing is deleted).'
  );
}

/**
 * "Fork here" and "Rewind here" for one message of the session's timeline. The last message has no
 * "Rewind here": the session already continues after it.
 */
export function MessageBranchButtons({ session, message, lastSeq, onRewound }) {
  const [busy, setBusy] = useState(null);
  const [error, setError] = useState(null);
  const closed = session.status === 'ended' || session.status === 'expired';
  const fork = async () => {
    setBusy('fork');
    setError(null);
    try {
      const made = await client.sessions.fork(session.id, { at_seq: message.seq });
      location.hash = `#/sessions/${encodeURIComponent(made.id)}`;
    } catch (e) {
      setError(e);
    } finally {
      setBusy(null);
    }
  };
  const rewind = async () => {
    if (!confirm(rewindQuestion(session, message.seq))) return;
    setBusy('rewind');
    setError(null);
    try {
      await client.sessions.rewind(session.id, { at_seq: message.seq, expected_version: session.version });
      onRewound();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(null);
    }
  };
  return (
    <span class="branch-buttons">
      <button
        type="button"
        disabled={busy !== null}
        aria-label={`Fork here: a new session after message #${message.seq}`}
        onClick={fork}
      >
        {busy === 'fork' ? 'Forking…' : 'Fork here'}
      </button>
      {closed || message.seq >= lastSeq ? null : (
        <button
          type="button"
          disabled={busy !== null}
          aria-label={`Rewind here: continue after message #${message.seq}`}
          onClick={rewind}
        >
          {busy === 'rewind' ? 'Rewinding…' : 'Rewind here'}
        </button>
      )}
      <ErrorNote error={error} />
    </span>
  );
}

/** Where a task's fork data is kept (the store's FORK_DATA_KEY). */
const FORK_DATA_KEY = 'agentstate.fork';

/**
 * What a task copied by a fork refers to: `{ taskId, done, after }`, each action as the API answers it (or
 * `{ id }` alone when it is gone or not readable with this token); null for a task that is not a copy.
 */
export async function forkOriginOf(task) {
  const origin = task.data?.[FORK_DATA_KEY];
  if (!origin || typeof origin !== 'object') return null;
  const ids = (list) => (Array.isArray(list) ? list.filter((id) => typeof id === 'string') : []);
  const read = (id) =>
    client.actions.get(id).catch((error) => {
      if (error instanceof AgentStateHttpError && error.status === 404) return { id };
      throw error;
    });
  const [done, after] = await Promise.all([
    Promise.all(ids(origin.actions_done).map(read)),
    Promise.all(ids(origin.actions_after).map(read)),
  ]);
  return { taskId: typeof origin.task_id === 'string' ? origin.task_id : null, done, after };
}

function ActionLine({ action }) {
  return (
    <li data-action={action.id}>
      {action.status ? (
        <>
          <strong>{action.tool ?? action.type}</strong> <Badge value={action.status} />{' '}
          <span class="mono muted" title={action.idempotency_key}>
            {short(action.params, 60)}
          </span>
        </>
      ) : (
        <span class="mono" title={action.id}>
          {shortId(action.id)} <span class="muted">(no longer readable)</span>
        </span>
      )}
    </li>
  );
}

/** A copied task's origin, in its card: the task it was copied from and the actions around the fork point. */
export function ForkedTask({ origin }) {
  if (!origin) return null;
  return (
    <div class="forked-task" data-testid="forked-task">
      <p>
        Copied at the fork from task{' '}
        {origin.taskId ? <TaskLink id={origin.taskId} /> : <span class="muted">(unknown)</span>}
      </p>
      {origin.done.length > 0 ? (
        <>
          <p class="muted">Done before the fork point (inherited, never run again here):</p>
          <ul data-testid="fork-actions-done">
            {origin.done.map((action) => (
              <ActionLine key={action.id} action={action} />
            ))}
          </ul>
        </>
      ) : null}
      {origin.after.length > 0 ? (
        <>
          <p class="warn-note">
            Run by the original after the fork point: not part of this branch, but their effects are in the
            world.
          </p>
          <ul data-testid="fork-actions-after">
            {origin.after.map((action) => (
              <ActionLine key={action.id} action={action} />
            ))}
          </ul>
        </>
      ) : null}
    </div>
  );
}
