/** Talk to the session's agent: `POST /v1/sessions/{id}/turns`, one Idempotency-Key per message. */
import { useState } from 'preact/hooks';
import { client } from './api.js';
import { ErrorNote } from './ui.jsx';

export function Chat({ session, messages, onTurn }) {
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
  return (
    <div class="chat">
      <ol class="bubbles" data-testid="chat-log" aria-live="polite">
        {said.map((m) => (
          <li key={m.id} class={`bubble ${m.role}`}>
            {m.content}
          </li>
        ))}
        {busy ? <li class="bubble assistant pending">…</li> : null}
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
