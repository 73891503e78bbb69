/**
 * A session's timeline: messages, task transitions, actions and checkpoints on one time axis. Entries at
 * the same instant keep the order in which a turn writes them: the user's message, task changes, actions,
 * checkpoints, the reply.
 */
import { useState } from 'preact/hooks';
import { clock, short } from './format.js';
import { Badge, TaskLink } from './ui.jsx';

const KINDS = [
  ['message', 'Messages'],
  ['event', 'Task events'],
  ['action', 'Actions'],
  ['checkpoint', 'Checkpoints'],
];

function rank(entry) {
  if (entry.kind === 'message') return entry.item.role === 'user' ? 0 : 4;
  if (entry.kind === 'action') return entry.phase === 'begin' ? 2 : 2.5;
  return { event: 1, checkpoint: 3 }[entry.kind];
}

export function buildTimeline({ messages, tasks, checkpoints }) {
  const entries = messages.map((item) => ({ kind: 'message', at: item.created_at, item }));
  for (const { task, events, actions } of tasks) {
    for (const item of events) entries.push({ kind: 'event', at: item.at, item, task });
    for (const item of actions) {
      entries.push({ kind: 'action', phase: 'begin', at: item.created_at, item, task });
      // Its outcome, when it has one: completed (SUCCESS, FAILED, or resolved by a person) or found UNKNOWN.
      const ended = item.completed_at ?? (item.status === 'UNKNOWN' ? item.updated_at : null);
      if (ended !== null) entries.push({ kind: 'action', phase: 'end', at: ended, item, task });
    }
  }
  for (const item of checkpoints) entries.push({ kind: 'checkpoint', at: item.created_at, item });
  return entries.sort((a, b) => a.at.localeCompare(b.at) || rank(a) - rank(b));
}

function Entry({ entry }) {
  const { item } = entry;
  switch (entry.kind) {
    case 'message':
      return (
        <>
          <span class={`role role-${item.role}`}>{item.role}</span> <span class="muted">#{item.seq}</span>{' '}
          <span class="content">{item.content}</span>
        </>
      );
    case 'event':
      return (
        <>
          <TaskLink id={entry.task.id}>{entry.task.type}</TaskLink> {item.from_state ?? '∅'} →{' '}
          <Badge value={item.to_state} kind="state" /> <span class="muted">{item.cause}</span>
        </>
      );
    case 'action':
      return entry.phase === 'begin' ? (
        <>
          action <strong>{item.tool ?? item.type}</strong> recorded, key{' '}
          <span class="mono" title={item.idempotency_key}>
            {short(item.idempotency_key, 24)}
          </span>{' '}
          <span class="muted">now</span> <Badge value={item.status} />
        </>
      ) : (
        <>
          action <strong>{item.tool ?? item.type}</strong> → <Badge value={item.status} />{' '}
          <span class="muted">after {item.attempts} attempt(s)</span>
          {item.error ? <span class="bad"> {item.error.message}</span> : null}
          {item.note ? <div class="note">{item.note}</div> : null}
        </>
      );
    default:
      return (
        <>
          checkpoint <span class="mono">step {item.step}</span> {item.label}
        </>
      );
  }
}

/** `messageTools(message)`: what a message's row offers besides its text (the session's branch buttons). */
export function Timeline({ entries, messageTools }) {
  const [shown, setShown] = useState({ message: true, event: true, action: true, checkpoint: true });
  const visible = entries.filter((e) => shown[e.kind]);
  return (
    <>
      <fieldset class="toggles">
        <legend>Show</legend>
        {KINDS.map(([kind, label]) => (
          <label key={kind}>
            <input
              type="checkbox"
              checked={shown[kind]}
              onChange={(e) => setShown({ ...shown, [kind]: e.currentTarget.checked })}
            />{' '}
            {label}
          </label>
        ))}
      </fieldset>
      <ol class="timeline" data-testid="timeline">
        {visible.map((entry) => (
          <li
            key={`${entry.kind}-${entry.phase ?? ''}-${entry.item.id}`}
            class={`tl tl-${entry.kind}${entry.kind === 'action' ? ` tl-${entry.item.status.toLowerCase()}` : ''}`}
            data-kind={entry.kind}
            data-phase={entry.phase}
          >
            <time class="mono" datetime={entry.at}>
              {clock(entry.at)}
            </time>
            <div>
              <Entry entry={entry} />
              {entry.kind === 'message' && messageTools ? messageTools(entry.item) : null}
            </div>
          </li>
        ))}
      </ol>
    </>
  );
}
