/**
 * The system part built from a session's open tasks: for each, its type, state, the slots filled and
 * missing, the next step and its status line. This is the state of the work, not a summary of the chat
 * (SPEC 4: a resumed session rebuilds its context from its tasks' state plus the last messages).
 */
import type { JsonValue } from '../core/json.js';
import type { Task, TaskState } from '../core/model.js';

/** What a task type may tell the builder. Every field is optional; the generic description covers the rest. */
export interface TaskTypeInfo {
  /** Slots the task needs. A required slot that is absent, null or '' is listed as missing. */
  readonly required_slots?: readonly string[];
  /** Replaces the generic description of a task of this type. */
  readonly describe?: (task: Task) => string;
}

export type TaskTypes = Readonly<Record<string, TaskTypeInfo>>;

const VALUE_LIMIT = 120;

function isEmpty(value: JsonValue | undefined): boolean {
  return value === undefined || value === null || value === '';
}

function show(value: JsonValue): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return text.length > VALUE_LIMIT ? `${text.slice(0, VALUE_LIMIT - 1)}…` : text;
}

/** Slots that are missing: required ones not filled, and any slot present but null or ''. */
export function missingSlots(task: Task, info?: TaskTypeInfo): string[] {
  const required = info?.required_slots ?? asStringList(task.data.required_slots);
  const missing = required.filter((name) => isEmpty(task.slots[name]));
  for (const [name, value] of Object.entries(task.slots)) {
    if (isEmpty(value) && !missing.includes(name)) missing.push(name);
  }
  return missing;
}

function asStringList(value: JsonValue | undefined): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}

const NEXT_BY_STATE: Readonly<Record<TaskState, string>> = {
  INIT: 'start: ask the user for what the task needs',
  COLLECTING: 'ask the user for the missing details',
  CONFIRMING: 'ask the user to confirm the details before acting',
  EXECUTING: 'wait for the running actions to finish and report the result',
  FAILED: 'tell the user what failed and offer to retry',
  DONE: 'nothing: the task is done',
  CANCELLED: 'nothing: the task was cancelled',
};

/** The next step: `data.next_step` when the runtime set one, else one derived from the state and slots. */
export function nextStep(task: Task, missing: readonly string[]): string {
  if (typeof task.data.next_step === 'string' && task.data.next_step !== '') return task.data.next_step;
  if (task.state === 'COLLECTING' && missing.length > 0) return `ask the user for ${missing[0]}`;
  if (task.state === 'COLLECTING') return 'all details are in: ask the user to confirm';
  return NEXT_BY_STATE[task.state];
}

/** The generic description, from type, state, slots, status line and next step. */
export function describeTaskGeneric(task: Task, info?: TaskTypeInfo): string {
  const missing = missingSlots(task, info);
  const filled = Object.entries(task.slots).filter(([, value]) => !isEmpty(value));
  const lines = [`- Task ${task.type} (${task.id}): state ${task.state}`];
  if (task.status_line !== '') lines.push(`  Status: ${task.status_line}`);
  lines.push(
    `  Slots filled: ${filled.length === 0 ? 'none' : filled.map(([k, v]) => `${k}=${show(v)}`).join(', ')}`,
  );
  lines.push(`  Slots missing: ${missing.length === 0 ? 'none' : missing.join(', ')}`);
  lines.push(`  Next step: ${nextStep(task, missing)}`);
  return lines.join('\n');
}

export function describeTask(task: Task, types: TaskTypes = {}): string {
  const info = types[task.type];
  return info?.describe ? info.describe(task) : describeTaskGeneric(task, info);
}

/** The task section of the system part. Tasks are listed oldest first (by created_at, then id). */
export function describeTasks(tasks: readonly Task[], types: TaskTypes = {}): string {
  if (tasks.length === 0) return '# Open tasks\nNone.';
  const sorted = [...tasks].sort((a, b) =>
    a.created_at === b.created_at ? (a.id < b.id ? -1 : 1) : a.created_at < b.created_at ? -1 : 1,
  );
  return ['# Open tasks', ...sorted.map((task) => describeTask(task, types))].join('\n');
}

/** Task type infos from definitions that mark slots `required` (the runtime's TaskType has this shape). */
export function taskTypesFrom(
  types: Iterable<{
    readonly name: string;
    readonly slots: Readonly<Record<string, { readonly required: boolean }>>;
  }>,
): TaskTypes {
  const out: Record<string, TaskTypeInfo> = {};
  for (const type of types) {
    out[type.name] = {
      required_slots: Object.entries(type.slots)
        .filter(([, spec]) => spec.required)
        .map(([name]) => name),
    };
  }
  return out;
}
