/**
 * The context of a session resumed after a while: its last N messages plus a summary generated from the
 * state of its tasks (not from the whole history). The full context builder lives elsewhere.
 */
import type { JsonValue } from '../core/json.js';
import type { Message, Task } from '../core/model.js';
import { OPEN_TASK_STATES } from '../core/model.js';
import type { ReadScope, StateStore } from '../store/types.js';

function show(value: JsonValue | undefined): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** One line per task: type, state, status line and filled slots. Open tasks first, most recent first. */
export function summarizeTasks(tasks: readonly Task[]): string {
  if (tasks.length === 0) return 'No open tasks.';
  const sorted = [...tasks].sort(
    (a, b) => b.updated_at.localeCompare(a.updated_at) || a.id.localeCompare(b.id),
  );
  const lines = sorted.map((task) => {
    const slots = Object.entries(task.slots)
      .map(([name, value]) => `${name}=${show(value)}`)
      .join(', ');
    return `- ${task.type} ${task.id} [${task.state}] ${task.status_line}${slots.length > 0 ? ` (slots: ${slots})` : ''}`;
  });
  return `Tasks of this conversation:\n${lines.join('\n')}`;
}

export interface ResumeContext {
  readonly summary: string;
  readonly messages: Message[];
  readonly tasks: Task[];
}

/** The last `lastMessages` messages (default 10) and a summary of the session's open tasks. */
export async function resumeContext(
  store: StateStore,
  scope: ReadScope,
  sessionId: string,
  options: { readonly lastMessages?: number } = {},
): Promise<ResumeContext> {
  const messages = await store.lastMessages(scope, sessionId, options.lastMessages ?? 10);
  const page = await store.listTasks(scope, { session_id: sessionId, state: OPEN_TASK_STATES, limit: 100 });
  return { summary: summarizeTasks(page.items), messages, tasks: page.items };
}
