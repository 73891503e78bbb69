/**
 * Tool calls waiting for a person's approval: PENDING actions of type `ai_sdk_approval` (the AI SDK chat
 * store's `needsApproval` calls). The decision is the action's outcome, `PATCH /v1/actions/{id}`, in the
 * shapes the chat store reads back: SUCCESS `{ approved: true }`, or FAILED with code `denied` and the
 * reason as its message. The chat carries the decision out when it continues.
 */
import { useState } from 'preact/hooks';
import { client } from './api.js';
import { ago, shortId } from './format.js';
import { ErrorNote, SessionLink, TaskLink } from './ui.jsx';
import './approval.css';

export const APPROVAL_ACTION_TYPE = 'ai_sdk_approval';
/** The message of a denial given without a reason (the chat store's own default). */
const DENIED = 'The tool call was denied.';

/** Whether `action` is a tool call that still waits for a person's approval. */
export function waitsForApproval(action) {
  return action.type === APPROVAL_ACTION_TYPE && action.status === 'PENDING';
}

/** The `PATCH /v1/actions/{id}` body of a decision; the note says where it was made, as the chat store's do. */
export function decisionBody(approved, reason) {
  const why = reason.trim();
  if (approved) return { status: 'SUCCESS', result: { approved: true }, note: 'approved in the inspector' };
  return {
    status: 'FAILED',
    error: { code: 'denied', message: why === '' ? DENIED : why },
    note: `denied in the inspector${why === '' ? '' : `: ${why}`}`,
  };
}

/** Approve, or Deny with an optional reason. */
export function ApprovalForm({ action, onDone }) {
  const [reason, setReason] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  const tool = action.tool ?? 'tool call';
  const reasonId = `approval-${action.id}-reason`;

  const decide = async (approved) => {
    setError(null);
    setBusy(true);
    try {
      await client.actions.update(action.id, decisionBody(approved, reason));
      onDone?.();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };

  return (
    <form
      class="approval-form"
      aria-label={`Decide ${tool} (${shortId(action.id)})`}
      data-testid="approval-form"
      onSubmit={(event) => {
        event.preventDefault();
        decide(false);
      }}
    >
      <button
        type="button"
        class="primary"
        disabled={busy}
        aria-label={`Approve ${tool}`}
        onClick={() => decide(true)}
      >
        Approve
      </button>
      <label for={reasonId}>Reason for denying (optional)</label>
      <input id={reasonId} value={reason} disabled={busy} onInput={(e) => setReason(e.currentTarget.value)} />
      <button type="submit" class="deny" disabled={busy} aria-label={`Deny ${tool}`}>
        Deny
      </button>
      <ErrorNote error={error} />
    </form>
  );
}

/** What a waiting call would do: the tool and its input, in full. */
function Call({ action }) {
  return (
    <>
      <strong>{action.tool ?? action.type}</strong>
      <pre class="approval-params mono">{JSON.stringify(action.params, null, 2)}</pre>
    </>
  );
}

/** The calls of `actions` that wait for approval, each with where it comes from and the form to decide. */
export function ApprovalList({ actions, now, onDone }) {
  const waiting = actions.filter(waitsForApproval);
  return (
    <ul class="approvals">
      {waiting.map((a) => (
        <li key={a.id} data-action={a.id} data-status={a.status}>
          <Call action={a} />
          <div class="muted">
            {a.session_id ? (
              <>
                session <SessionLink id={a.session_id} />{' '}
              </>
            ) : null}
            task <TaskLink id={a.task_id} /> <span class="user-id">{a.user_id}</span> asked{' '}
            {ago(a.created_at, now)}
          </div>
          <ApprovalForm action={a} onDone={onDone} />
        </li>
      ))}
    </ul>
  );
}

/** The forms for the calls of one task that wait for approval (a session's task card). */
export function TaskApprovals({ actions, onDone }) {
  const waiting = actions.filter(waitsForApproval);
  if (waiting.length === 0) return null;
  return (
    <div class="task-approvals">
      {waiting.map((a) => (
        <div key={a.id} data-action={a.id} data-status={a.status}>
          <Call action={a} />
          <ApprovalForm action={a} onDone={onDone} />
        </div>
      ))}
    </div>
  );
}
