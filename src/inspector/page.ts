/**
 * The HTML shell of the inspector. It embeds the task types the server's agents define (slot names,
 * labels, which are required: definitions, never records) so the page can show missing slots; every record
 * it shows comes from the public API (`/v1/...`) with the token the user enters.
 */
import type { Agent } from '../runtime/agent.js';

export interface TaskTypeSketch {
  readonly name: string;
  readonly description: string;
  readonly confirm: boolean;
  readonly slots: readonly { name: string; label: string; required: boolean; description: string }[];
}

export function sketchTaskTypes(agents: readonly Agent[]): TaskTypeSketch[] {
  const byName = new Map<string, TaskTypeSketch>();
  for (const agent of agents) {
    for (const type of agent.taskTypes) {
      byName.set(type.name, {
        name: type.name,
        description: type.description,
        confirm: type.confirm,
        slots: Object.entries(type.slots).map(([name, spec]) => ({
          name,
          label: spec.label,
          required: spec.required,
          description: spec.description,
        })),
      });
    }
  }
  return [...byName.values()];
}

/** `<` in embedded JSON would let a value close the script element. */
function embed(value: unknown): string {
  return JSON.stringify(value).replace(/</g, '\\u003c');
}

export function renderPage(options: {
  readonly base: string;
  readonly taskTypes: readonly TaskTypeSketch[];
  readonly pollMs: number;
  readonly agents: readonly string[];
}): string {
  const config = { taskTypes: options.taskTypes, pollMs: options.pollMs, agents: options.agents };
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>agentstate inspector</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${options.base}app.css">
</head>
<body>
<div id="app"><noscript>The inspector needs JavaScript.</noscript></div>
<script type="application/json" id="inspector-config">${embed(config)}</script>
<script type="module" src="${options.base}app.js"></script>
</body>
</html>
`;
}
