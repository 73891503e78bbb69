/**
 * Talk to the session's agent: `POST /v1/sessions/{id}/turns`, one Idempotency-Key per message. The reply of
 * a run in flight (any run of the session, this page's or another client's) shows as it streams, until the
 * reloaded messages hold the run's own reply.
 */
import { useState } from 'preact/hooks';
import { client } from './api.js';
import { ErrorNote } from './ui.jsx';

export function Chat({ session, messages, streaming, onTurn }) {
  const [input, setInput] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  const closed = session.status === 'ended' || session.status === 'expired';
  const send = async (event) => {
    event.preventDefault();
    const text = input.trim();
    if (text === '') return;
    setBusy(true);
    setError(null);
    try {
      await client.sessions.turn(session.id, text);
      setInput('');
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
      onTurn();
    }
  };
  const said = messages.filter((m) => m.role === 'user' || m.role === 'assistant');
  const answered =
    streaming !== null &&
    messages.some((m) => m.role === 'assistant' && m.metadata?.run_id === streaming.runId);
  const live = streaming !== null && streaming.text !== '' && !answered ? streaming.text : null;
  return (
    <div class="chat">
      <ol class="bubbles" data-testid="chat-log" aria-live="polite">
        {said.map((m) => (
          <li key={m.id} class={`bubble ${m.role}`}>
            {m.content}
          </li>
        ))}
        {live !== null ? (
          <li class="bubble assistant streaming" data-testid="streaming-reply">
            {live}
          </li>
        ) : busy ? (
          <li class="bubble assistant pending">…</li>
        ) : null}
      </ol>
      <form class="chat-form" onSubmit={send}>
        <label for="chat-input" class="sr-only">
          Message to the agent
        </label>
        <input
          id="chat-input"
          placeholder={
            closed ? `The session is ${session.status}` : `Message ${session.agent ?? 'the agent'}…`
          }
          value={input}
          disabled={busy || closed}
          onInput={(e) => setInput(e.currentTarget.value)}
        />
        <button type="submit" class="primary" disabled={busy || closed || input.trim() === ''}>
          Send
        </button>
      </form>
      <ErrorNote error={error} />
    </div>
  );
}
