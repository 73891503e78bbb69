/** Shared pieces: badges, links to records, error and empty states. */
import { shortId } from './format.js';

export function Badge({ value, kind = 'status' }) {
  return <span class={`badge ${kind}-${String(value).toLowerCase()}`}>{value}</span>;
}

export function SessionLink({ id }) {
  return (
    <a href={`#/sessions/${encodeURIComponent(id)}`} class="mono" title={id}>
      {shortId(id)}
    </a>
  );
}

export function TaskLink({ id, children }) {
  return (
    <a href={`#/tasks/${encodeURIComponent(id)}`} class={children ? '' : 'mono'} title={id}>
      {children ?? shortId(id)}
    </a>
  );
}

export function ErrorNote({ error }) {
  if (!error) return null;
  return (
    <p class="error" role="alert">
      {error.status ? `${error.status} ${error.code}: ` : ''}
      {error.message}
      {error.status === 401 ? ' Use "Change token" at the top to enter another one.' : ''}
    </p>
  );
}

export function Empty({ children }) {
  return <p class="empty">{children}</p>;
}

export function Section({ title, id, children, actions }) {
  return (
    <section class="panel" aria-labelledby={id}>
      <header class="panel-head">
        <h2 id={id}>{title}</h2>
        {actions}
      </header>
      {children}
    </section>
  );
}
