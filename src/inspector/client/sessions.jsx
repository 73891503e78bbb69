/** The sessions list: counts by status, filters (status, user), open by id, and the table. */
import { useState } from 'preact/hooks';
import { client } from './api.js';
import { ago, countdown } from './format.js';
import { useNow, usePoll } from './hooks.js';
import { Badge, Empty, ErrorNote, Section, SessionLink } from './ui.jsx';

const STATUSES = ['active', 'waiting_for_user', 'paused', 'ended'];

function Counts() {
  const { data, error } = usePoll(() => client.sessions.list({ limit: 500 }), 'counts');
  const items = data?.items ?? [];
  const more = data?.next_cursor ? '+' : '';
  return (
    <section class="counts" aria-label="Sessions by status" data-testid="counts">
      {STATUSES.map((status) => (
        <div class={`count-card status-${status}`} key={status}>
          <span class="n">
            {items.filter((s) => s.status === status).length}
            {more}
          </span>
          <span class="label">{status.replace(/_/g, ' ')}</span>
        </div>
      ))}
      <ErrorNote error={error} />
    </section>
  );
}

function OpenById() {
  const [id, setId] = useState('');
  const open = (event) => {
    event.preventDefault();
    const value = id.trim();
    if (value.startsWith('task_')) location.hash = `#/tasks/${encodeURIComponent(value)}`;
    else if (value !== '') location.hash = `#/sessions/${encodeURIComponent(value)}`;
  };
  return (
    <form class="inline" onSubmit={open}>
      <label for="open-id">Open by id</label>
      <input
        id="open-id"
        placeholder="sess_… or task_…"
        value={id}
        onInput={(e) => setId(e.currentTarget.value)}
      />
      <button type="submit">Open</button>
    </form>
  );
}

export function SessionsView({ who }) {
  const [status, setStatus] = useState('');
  const [user, setUser] = useState('');
  const now = useNow();
  const filters = { status, user_id: who.kind === 'user' ? '' : user.trim(), limit: 100 };
  const key = JSON.stringify(filters);
  const { data, error, loaded } = usePoll(() => client.sessions.list(filters), key);
  const sessions = [...(data?.items ?? [])].sort((a, b) =>
    b.last_activity_at.localeCompare(a.last_activity_at),
  );
  return (
    <>
      <Counts />
      <Section
        title="Sessions"
        id="sessions-title"
        actions={
          <div class="filters">
            <label for="f-status">Status</label>
            <select id="f-status" value={status} onChange={(e) => setStatus(e.currentTarget.value)}>
              <option value="">any</option>
              {STATUSES.map((s) => (
                <option value={s} key={s}>
                  {s}
                </option>
              ))}
            </select>
            {who.kind !== 'user' && (
              <>
                <label for="f-user">User</label>
                <input id="f-user" value={user} onInput={(e) => setUser(e.currentTarget.value)} />
              </>
            )}
            <OpenById />
          </div>
        }
      >
        <ErrorNote error={error} />
        {loaded && sessions.length === 0 ? (
          <Empty>No sessions match.</Empty>
        ) : (
          <table class="list" data-testid="sessions">
            <thead>
              <tr>
                <th scope="col">Session</th>
                <th scope="col">Status</th>
                <th scope="col">User</th>
                <th scope="col">Agent</th>
                <th scope="col">Last activity</th>
                <th scope="col">Expires in</th>
              </tr>
            </thead>
            <tbody>
              {sessions.map((s) => (
                <tr key={s.id} data-session={s.id}>
                  <td>
                    <SessionLink id={s.id} />
                  </td>
                  <td>
                    <Badge value={s.status} />
                  </td>
                  <td class="user-id">{s.user_id}</td>
                  <td>{s.agent ?? '—'}</td>
                  <td title={s.last_activity_at}>{ago(s.last_activity_at, now)}</td>
                  <td class="mono" title={s.expires_at}>
                    {s.status === 'ended' ? 'ended' : countdown(s.expires_at, now)}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Section>
    </>
  );
}
