/**
 * Resolving an UNKNOWN action (or a stuck PENDING one) by hand: SUCCESS with the JSON result the person
 * found downstream, or FAILED with a reason. `PATCH /v1/actions/{id}`; the API keeps who resolved it.
 */
import { useState } from 'preact/hooks';
import { client } from './api.js';
import { ErrorNote } from './ui.jsx';

export function ResolveForm({ action, onDone }) {
  const [outcome, setOutcome] = useState('SUCCESS');
  const [result, setResult] = useState('{\n  \n}');
  const [reason, setReason] = useState('');
  const [note, setNote] = useState('');
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const base = `resolve-${action.id}`;

  const submit = async (event) => {
    event.preventDefault();
    setError(null);
    let body;
    if (outcome === 'SUCCESS') {
      let parsed;
      try {
        parsed = JSON.parse(result);
      } catch (e) {
        setError({ message: `The result is not valid JSON: ${e.message}` });
        return;
      }
      body = { status: 'SUCCESS', result: parsed };
    } else {
      if (reason.trim() === '') {
        setError({ message: 'Give a reason for the failure.' });
        return;
      }
      body = { status: 'FAILED', error: { code: 'resolved_failed', message: reason.trim() } };
    }
    if (note.trim() !== '') body.note = note.trim();
    setBusy(true);
    try {
      await client.actions.update(action.id, body);
      onDone?.();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };

  return (
    <form
      class="resolve"
      onSubmit={submit}
      aria-label={`Resolve action ${action.id}`}
      data-testid="resolve-form"
    >
      <fieldset>
        <legend>Outcome downstream</legend>
        <label>
          <input
            type="radio"
            name={`${base}-outcome`}
            value="SUCCESS"
            checked={outcome === 'SUCCESS'}
            onChange={() => setOutcome('SUCCESS')}
          />{' '}
          It happened: SUCCESS
        </label>
        <label>
          <input
            type="radio"
            name={`${base}-outcome`}
            value="FAILED"
            checked={outcome === 'FAILED'}
            onChange={() => setOutcome('FAILED')}
          />{' '}
          It did not happen: FAILED
        </label>
      </fieldset>
      {outcome === 'SUCCESS' ? (
        <>
          <label for={`${base}-result`}>Result (JSON)</label>
          <textarea
            id={`${base}-result`}
            rows={4}
            spellcheck={false}
            value={result}
            onInput={(e) => setResult(e.currentTarget.value)}
          />
        </>
      ) : (
        <>
          <label for={`${base}-reason`}>Reason</label>
          <input id={`${base}-reason`} value={reason} onInput={(e) => setReason(e.currentTarget.value)} />
        </>
      )}
      <label for={`${base}-note`}>Note (optional: how you checked)</label>
      <input id={`${base}-note`} value={note} onInput={(e) => setNote(e.currentTarget.value)} />
      <ErrorNote error={error} />
      <button type="submit" class="primary start" disabled={busy}>
        {busy ? 'Resolving…' : `Resolve as ${outcome}`}
      </button>
    </form>
  );
}
