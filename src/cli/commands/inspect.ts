/**
 * `agentstate inspect ID`: the status line and timeline of a session, task or action: messages, task
 * transitions, actions and checkpoints in time order.
 */
import type { Command } from 'commander';
import type { Action, Checkpoint, Message, Task, TaskEvent } from '../../core/model.js';
import type { ReadScope, StateStore } from '../../store/types.js';
import {
  CliError,
  checkId,
  idShape,
  type StoreOptions,
  scopeOf,
  whereOf,
  withStore,
  withStoreOptions,
} from '../context.js';
import { compactJson, print, printJson, shortTime } from '../format.js';
import { actionsOfTask, checkpointsOfSession, messagesOfSession, tasksOfSession } from './runs.js';

interface Entry {
  readonly at: string;
  readonly text: string;
}

interface Inspection {
  readonly kind: 'session' | 'task' | 'action';
  readonly header: string[];
  readonly timeline: Entry[];
}

const messageEntry = (m: Message): Entry => ({
  at: m.created_at,
  text: `message #${m.seq} ${m.role}: ${m.content.replace(/\s+/g, ' ').slice(0, 100)}`,
});
const eventEntry = (task: Task, e: TaskEvent): Entry => ({
  at: e.at,
  text: `task ${task.id} (${task.type}) ${e.from_state ?? 'new'} -> ${e.to_state} [${e.cause}]`,
});
const actionEntries = (a: Action): Entry[] => [
  { at: a.created_at, text: `action ${a.id} ${a.tool ?? a.type} begun ${compactJson(a.params, 50)}` },
  ...(a.completed_at || a.status === 'UNKNOWN'
    ? [
        {
          at: a.completed_at ?? a.updated_at,
          text: `action ${a.id} ${a.status}${a.result !== null ? ` ${compactJson(a.result, 50)}` : ''}${a.note ? ` (${a.note})` : ''}`,
        },
      ]
    : []),
];
const checkpointEntry = (c: Checkpoint): Entry => ({
  at: c.created_at,
  text: `checkpoint ${c.id} run ${c.run_id} step ${c.step} ${c.label}`,
});

function taskLine(t: Task): string {
  return `task ${t.id}  ${t.type}  ${t.state}  v${t.version}  slots ${compactJson(t.slots, 80)}\n  ${t.status_line}`;
}

async function taskTimeline(store: StateStore, scope: ReadScope, task: Task): Promise<Entry[]> {
  const events = await store.listTaskEvents(scope, task.id);
  const actions = await actionsOfTask(store, scope, task.id);
  return [...events.map((e) => eventEntry(task, e)), ...actions.flatMap(actionEntries)];
}

async function inspectSession(store: StateStore, scope: ReadScope, id: string): Promise<Inspection | null> {
  const s = await store.getSession(scope, id);
  if (s === null) return null;
  const tasks = await tasksOfSession(store, scope, id);
  const messages = await messagesOfSession(store, scope, id);
  const timeline: Entry[] = messages.map(messageEntry);
  for (const task of tasks) timeline.push(...(await taskTimeline(store, scope, task)));
  timeline.push(...(await checkpointsOfSession(store, scope, s, messages)).map(checkpointEntry));
  const header = [
    `session ${s.id}  user ${s.user_id}  agent ${s.agent ?? '-'}  ${s.status}  v${s.version}  expires ${shortTime(s.expires_at)}`,
    ...tasks.map(taskLine),
  ];
  return { kind: 'session', header, timeline };
}

async function inspectTask(store: StateStore, scope: ReadScope, id: string): Promise<Inspection | null> {
  const task = await store.getTask(scope, id);
  if (task === null) return null;
  const header = [taskLine(task), `  session ${task.session_id ?? '-'}  user ${task.user_id}`];
  return { kind: 'task', header, timeline: await taskTimeline(store, scope, task) };
}

async function inspectAction(store: StateStore, scope: ReadScope, id: string): Promise<Inspection | null> {
  const a = await store.getAction(scope, id);
  if (a === null) return null;
  const task = await store.getTask(scope, a.task_id);
  const header = [
    `action ${a.id}  ${a.tool ?? a.type}  ${a.status}  attempts ${a.attempts}  key ${a.idempotency_key}`,
    `  params ${compactJson(a.params, 100)}`,
    ...(a.result !== null ? [`  result ${compactJson(a.result, 100)}`] : []),
    ...(a.error !== null ? [`  error ${a.error.code}: ${a.error.message}`] : []),
    ...(a.note !== null ? [`  note ${a.note}`] : []),
    ...(task ? [taskLine(task)] : []),
  ];
  return { kind: 'action', header, timeline: actionEntries(a) };
}

const KINDS = { sess: 'session', task: 'task', act: 'action' } as const;

/** Refuses an id that is not one of a session, task or action, saying what those look like. */
export function checkInspectId(id: string): void {
  const kind = KINDS[id.slice(0, id.indexOf('_')) as keyof typeof KINDS] as
    | (typeof KINDS)[keyof typeof KINDS]
    | undefined;
  if (kind !== undefined) {
    checkId(id, kind);
    return;
  }
  throw new CliError(
    `${JSON.stringify(id)} is not a session, task or action id: those are ${idShape('session')} (or task_, act_)`,
  );
}

export async function inspect(store: StateStore, scope: ReadScope, id: string): Promise<Inspection> {
  checkInspectId(id);
  const kind = id.slice(0, id.indexOf('_'));
  const found =
    kind === 'sess'
      ? await inspectSession(store, scope, id)
      : kind === 'task'
        ? await inspectTask(store, scope, id)
        : kind === 'act'
          ? await inspectAction(store, scope, id)
          : undefined;
  if (found === undefined)
    throw new CliError(`${id} is not a session, task or action id (sess_, task_, act_)`);
  if (found === null) throw new CliError(`${id} not found in ${whereOf(scope)}`);
  found.timeline.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
  return found;
}

export function registerInspectCommands(program: Command): void {
  withStoreOptions(
    program.command('inspect <id>').description('status line and timeline of a session, task or action'),
  )
    .option('--json', 'print JSON')
    .action(async (id: string, options: StoreOptions & { json?: boolean }) => {
      checkInspectId(id);
      const result = await withStore(options, (store) => inspect(store, scopeOf(options), id));
      if (options.json) return printJson(result);
      print(result.header.join('\n'));
      print('');
      if (result.timeline.length === 0) print('(nothing has happened yet)');
      for (const entry of result.timeline) print(`${shortTime(entry.at)}  ${entry.text}`);
    });
}
