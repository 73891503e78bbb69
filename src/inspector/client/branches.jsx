/**
 * A session's branches: where a fork comes from (with a link to it), the sessions forked from this one
 * (rewinds' branches too), and a message's "Fork here" and "Rewind here" buttons in the timeline.
 *
 * Fork here: `POST /v1/sessions/{id}/fork {at_seq}`, then the page opens the new session. Rewind here, once
 * the person confirms: `POST /v1/sessions/{id}/rewind {at_seq, expected_version}` (the version the page
 * shows: a session changed meanwhile answers 409 and is not rewound), then the view reloads; what came
 * after the message stays readable as a branch.
 */
import { useState } from 'preact/hooks';
import { client } from './api.js';
import { dateTime } from './format.js';
import { Badge, Empty, ErrorNote, SessionLink } from './ui.jsx';
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
