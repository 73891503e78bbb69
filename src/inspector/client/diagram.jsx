/**
 * A task's state machine (SPEC 1) as SVG: every state and allowed transition, the current state filled,
 * the states and transitions this task went through (from its events) drawn in the accent colour and
 * numbered in order.
 */

/** Same table as TASK_TRANSITIONS in src/core/model.ts (the client does not bundle zod). */
export const TRANSITIONS = {
  INIT: ['COLLECTING', 'CANCELLED'],
  COLLECTING: ['CONFIRMING', 'FAILED', 'CANCELLED'],
  CONFIRMING: ['EXECUTING', 'COLLECTING', 'CANCELLED'],
  EXECUTING: ['DONE', 'FAILED', 'CANCELLED'],
  FAILED: ['COLLECTING'],
  DONE: [],
  CANCELLED: [],
};

const W = 112;
const H = 36;
const POS = {
  INIT: [70, 90],
  COLLECTING: [215, 90],
  CONFIRMING: [365, 90],
  EXECUTING: [515, 90],
  DONE: [665, 90],
  FAILED: [365, 190],
  CANCELLED: [665, 190],
};

/** Where the line between two boxes leaves `from` and enters `to`, and an optional bend. */
function edgePath(from, to) {
  const [x1, y1] = POS[from];
  const [x2, y2] = POS[to];
  if (from === 'CONFIRMING' && to === 'COLLECTING') {
    return `M ${x1 - 30} ${y1 - H / 2} C ${x1 - 40} ${y1 - 60}, ${x2 + 40} ${y2 - 60}, ${x2 + 30} ${y2 - H / 2}`;
  }
  if (from === 'FAILED' && to === 'COLLECTING') {
    return `M ${x1 - W / 2} ${y1} C ${x1 - 120} ${y1}, ${x2} ${y2 + 70}, ${x2} ${y2 + H / 2}`;
  }
  if (from === 'INIT' && to === 'CANCELLED') {
    return `M ${x1} ${y1 + H / 2} C ${x1} ${y1 + 150}, ${x2 - 200} ${y2 + 40}, ${x2 - W / 2} ${y2 + 8}`;
  }
  const dx = x2 - x1;
  const dy = y2 - y1;
  const scale = Math.min(W / 2 / Math.abs(dx || 1e-9), H / 2 / Math.abs(dy || 1e-9));
  const sx = x1 + dx * scale;
  const sy = y1 + dy * scale;
  const ex = x2 - dx * scale;
  const ey = y2 - dy * scale;
  return `M ${sx} ${sy} L ${ex} ${ey}`;
}

function midpoint(from, to) {
  const [x1, y1] = POS[from];
  const [x2, y2] = POS[to];
  if (from === 'CONFIRMING' && to === 'COLLECTING') return [(x1 + x2) / 2, y1 - 62];
  if (from === 'FAILED' && to === 'COLLECTING') return [x2 + 20, y1 - 10];
  return [(x1 + x2) / 2, (y1 + y2) / 2 - 9];
}

export function StateDiagram({ state, events, title }) {
  const path = (events ?? []).filter((e) => e.from_state !== null);
  const taken = new Map();
  path.forEach((event, index) => {
    const key = `${event.from_state}>${event.to_state}`;
    taken.set(key, [...(taken.get(key) ?? []), index + 1]);
  });
  const visited = new Set([state, ...(events ?? []).flatMap((e) => [e.from_state, e.to_state])]);
  const start = (events ?? []).find((e) => e.from_state === null)?.to_state;
  const trail = [...(start ? [start] : []), ...path.map((e) => e.to_state)];
  const label = `State machine${title ? ` of ${title}` : ''}: now ${state}; path ${trail.join(' → ') || state}`;
  return (
    <svg
      class="diagram"
      viewBox="0 0 740 250"
      role="img"
      aria-label={label}
      data-testid="diagram"
      data-state={state}
    >
      <title>{label}</title>
      <defs>
        <marker
          id="arrow"
          viewBox="0 0 10 10"
          refX="9"
          refY="5"
          markerWidth="7"
          markerHeight="7"
          orient="auto"
        >
          <path d="M 0 0 L 10 5 L 0 10 z" class="arrowhead" />
        </marker>
        <marker
          id="arrow-on"
          viewBox="0 0 10 10"
          refX="9"
          refY="5"
          markerWidth="7"
          markerHeight="7"
          orient="auto"
        >
          <path d="M 0 0 L 10 5 L 0 10 z" class="arrowhead on" />
        </marker>
      </defs>
      {Object.entries(TRANSITIONS).flatMap(([from, targets]) =>
        targets.map((to) => {
          const steps = taken.get(`${from}>${to}`);
          const [mx, my] = midpoint(from, to);
          return (
            <g
              key={`${from}-${to}`}
              class={`edge${steps ? ' on' : ''}${to === 'CANCELLED' ? ' cancel' : ''}`}
            >
              <path d={edgePath(from, to)} marker-end={steps ? 'url(#arrow-on)' : 'url(#arrow)'} />
              {steps && (
                <text x={mx} y={my} class="step">
                  {steps.join(',')}
                </text>
              )}
            </g>
          );
        }),
      )}
      {Object.entries(POS).map(([name, [x, y]]) => (
        <g
          key={name}
          class={`node${name === state ? ' current' : ''}${visited.has(name) ? ' visited' : ''} node-${name}`}
          data-node={name}
          aria-current={name === state ? 'step' : undefined}
        >
          <rect x={x - W / 2} y={y - H / 2} width={W} height={H} rx="8" />
          <text x={x} y={y + 5}>
            {name}
          </text>
        </g>
      ))}
    </svg>
  );
}
