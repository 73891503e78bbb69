/** The inspector's entry: the token gate, the header with navigation, and the view of the current route. */
import { render } from 'preact';
import { useState } from 'preact/hooks';
import { client, describeToken, storedToken, storeToken } from './api.js';
import { waitsForApproval } from './approval.jsx';
import { AttentionView } from './attention.jsx';
import { POLL_MS, usePoll, useRoute } from './hooks.js';
import { SessionView } from './session.jsx';
import { SessionsView } from './sessions.jsx';
import { TaskView } from './task.jsx';
import './styles.css';

function TokenForm({ onDone, current }) {
  const [value, setValue] = useState(current ?? '');
  const submit = (event) => {
    event.preventDefault();
    storeToken(value);
    onDone();
  };
  return (
    <main class="gate">
      <form class="panel token-form" onSubmit={submit}>
        <h1>agentstate inspector</h1>
        <p>
          Enter a tenant API key (sees the whole tenant) or a user token from <code>POST /v1/tokens</code>{' '}
          (sees one user). It is kept in this tab only (sessionStorage) and sent to this server's API.
        </p>
        <label for="token">API token</label>
        <input
          id="token"
          type="password"
          autocomplete="off"
          value={value}
          onInput={(e) => setValue(e.currentTarget.value)}
        />
        <div class="row">
          <button type="submit" class="primary" disabled={value.trim() === ''}>
            Use this token
          </button>
          <button
            type="button"
            onClick={() => {
              storeToken('');
              onDone();
            }}
          >
            No token (local server)
          </button>
        </div>
      </form>
    </main>
  );
}

/** What waits for a person: UNKNOWN actions and tool calls waiting for approval. */
async function attentionCount() {
  const [unknown, pending] = await Promise.all([
    client.actions.list({ status: 'UNKNOWN', limit: 500 }),
    client.actions.list({ status: 'PENDING', limit: 500 }),
  ]);
  return unknown.items.length + pending.items.filter(waitsForApproval).length;
}

function AttentionCount() {
  const { data } = usePoll(attentionCount, 'attention');
  const count = data ?? 0;
  return count > 0 ? (
    <span class="count">
      {count}
      <span class="sr-only"> need attention</span>
    </span>
  ) : null;
}

function App() {
  const [token, setToken] = useState(storedToken());
  const [changing, setChanging] = useState(false);
  const route = useRoute();
  if (token === null || changing) {
    return (
      <TokenForm
        current={token}
        onDone={() => {
          setToken(storedToken());
          setChanging(false);
        }}
      />
    );
  }
  const who = describeToken(token);
  const link = (view, label, extra) => (
    <a href={`#/${view === 'sessions' ? '' : view}`} aria-current={route.view === view ? 'page' : undefined}>
      {label}
      {extra}
    </a>
  );
  let view;
  if (route.view === 'sessions' && route.id) view = <SessionView id={route.id} key={route.id} />;
  else if (route.view === 'tasks' && route.id) view = <TaskView id={route.id} key={route.id} />;
  else if (route.view === 'attention') view = <AttentionView />;
  else view = <SessionsView who={who} />;
  return (
    <>
      <header class="top">
        <a class="brand" href="#/">
          agentstate <span>inspector</span>
        </a>
        <nav aria-label="Main">
          {link('sessions', 'Sessions')}
          {link('attention', 'Needs attention', <AttentionCount />)}
        </nav>
        <div class="who">
          <span data-testid="who">{who.label}</span>
          <button type="button" onClick={() => setChanging(true)}>
            Change token
          </button>
          <button
            type="button"
            onClick={() => {
              storeToken(null);
              setToken(null);
            }}
          >
            Sign out
          </button>
        </div>
      </header>
      <main id="main">{view}</main>
      <footer class="foot">
        Refreshes every {POLL_MS / 1000} s from the public API (/v1); an open session follows its live events
        · <a href="/docs">API docs</a> · <a href="/metrics">metrics</a>
      </footer>
    </>
  );
}

render(<App />, document.getElementById('app'));
