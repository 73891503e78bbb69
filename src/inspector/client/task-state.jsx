/** A task's state at a glance: status line, the state machine diagram, and its slots (filled and missing). */
import { StateDiagram } from './diagram.jsx';
import { short } from './format.js';
import { readConfig } from './hooks.js';
import { Badge, TaskLink } from './ui.jsx';

const TYPES = new Map((readConfig().taskTypes ?? []).map((t) => [t.name, t]));

export function Slots({ task }) {
  const type = TYPES.get(task.type);
  const names = [...new Set([...(type?.slots ?? []).map((s) => s.name), ...Object.keys(task.slots)])];
  if (names.length === 0) return null;
  return (
    <dl class="slots" data-testid="slots">
      {names.map((name) => {
        const spec = type?.slots.find((s) => s.name === name);
        const value = task.slots[name];
        const filled = value !== undefined && value !== null;
        return (
          <div class={`slot ${filled ? 'filled' : spec?.required ? 'missing' : 'optional'}`} key={name}>
            <dt title={spec?.description}>
              {spec?.label ?? name}
              {spec?.required ? <span class="req"> (required)</span> : null}
            </dt>
            <dd>{filled ? short(value, 60) : spec?.required ? 'missing' : 'not given'}</dd>
          </div>
        );
      })}
    </dl>
  );
}

/** `children`: what a person can do on the task now (a session's task card: its calls waiting for approval). */
export function TaskState({ task, events, link = true, children }) {
  return (
    <article class="task-state" data-task={task.id} data-state={task.state}>
      <header class="task-head">
        <h3>{link ? <TaskLink id={task.id}>{task.type}</TaskLink> : task.type}</h3>
        <Badge value={task.state} kind="state" />
        <span class="muted">v{task.version}</span>
      </header>
      <p class="status-line" data-testid="status-line">
        {task.status_line || '—'}
      </p>
      <StateDiagram state={task.state} events={events} title={task.type} />
      <Slots task={task} />
      {children}
    </article>
  );
}
