/**
 * The tools over sessions, messages, tasks and actions: what an agent in an MCP client reads to pick up where
 * a conversation, a task or a tool call was left. All of them read; none changes a record.
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { AgentStateError } from '../core/errors.js';
import {
  type Action,
  OPEN_TASK_STATES,
  type Session,
  SessionStatusSchema,
  type Task,
} from '../core/model.js';
import type { TurnRunner } from '../server/turn-runner.js';
import type { ReadScope, StateStore } from '../store/types.js';
import { readScopeFor } from './access.js';
import { CursorArg, LimitArg, type ToolDeps, UserIdArg } from './memory-tools.js';
import { guarded } from './results.js';

/** What the server's agent runtime adds, when there is one: the open tasks and context its turns use. */
export type McpRuntime = Pick<TurnRunner, 'openTasks' | 'context' | 'modelFor'>;

export interface RecordToolDeps extends ToolDeps {
  readonly runtime?: McpRuntime | null;
}

const SessionIdArg = z.string().min(1).max(100).describe('A session id (sess_...)');
const READ = { readOnlyHint: true, openWorldHint: false } as const;
/** Actions read per page while looking for PENDING ones left behind. */
const PENDING_SCAN = 500;
const PENDING_SCAN_PAGES = 4;
const DEFAULT_STALE_SECONDS = 600;

export async function requireSession(store: StateStore, scope: ReadScope, id: string): Promise<Session> {
  const session = await store.getSession(scope, id);
  if (session === null) {
    throw new AgentStateError('not_found', `session ${id} not found`, { details: { kind: 'session', id } });
  }
  return session;
}

/** A task as the tools show it: what it is, where it stands, and its status line. */
function taskSummary(task: Task) {
  const { id, user_id, session_id, type, state, status_line, slots, version, updated_at } = task;
  return { id, user_id, session_id, type, state, status_line, slots, version, updated_at };
}

export async function openTasksOf(
  store: StateStore,
  scope: ReadScope,
  session: Session,
  runtime: McpRuntime | null | undefined,
): Promise<Task[]> {
  if (runtime?.openTasks) return runtime.openTasks(session);
  const page = await store.listTasks(scope, { session_id: session.id, state: OPEN_TASK_STATES, limit: 100 });
  return page.items;
}

export function registerRecordTools(server: McpServer, deps: RecordToolDeps): void {
  const { store, access, log, runtime } = deps;

  server.registerTool(
    'sessions_list',
    {
      title: 'List sessions',
      description: 'Lists sessions, newest first, optionally of one status. Answers {items, next_cursor}.',
      inputSchema: z.strictObject({
        status: SessionStatusSchema.optional(),
        limit: LimitArg.optional(),
        cursor: CursorArg.optional(),
        user_id: UserIdArg.optional(),
      }),
      annotations: READ,
    },
    guarded('sessions_list', log, async ({ status, limit, cursor, user_id }) => {
      const page = await store.listSessions(readScopeFor(access, user_id), {
        limit: limit ?? 20,
        ...(status === undefined ? {} : { status }),
        ...(cursor === undefined ? {} : { cursor }),
      });
      return { items: page.items, next_cursor: page.next_cursor };
    }),
  );

  server.registerTool(
    'session_get',
    {
      title: 'Get a session',
      description:
        'Reads one session with its open tasks (each with its state and status line). Answers {session, open_tasks}.',
      inputSchema: z.strictObject({ session_id: SessionIdArg }),
      annotations: READ,
    },
    guarded('session_get', log, async ({ session_id }) => {
      const scope = readScopeFor(access);
      const session = await requireSession(store, scope, session_id);
      const tasks = await openTasksOf(store, scope, session, runtime);
      const model = runtime?.modelFor?.(session);
      return {
        session: model === undefined ? session : { ...session, model },
        open_tasks: tasks.map(taskSummary),
      };
    }),
  );

  server.registerTool(
    'messages_list',
    {
      title: "List a session's messages",
      description:
        'Lists the messages of a session in order, those after after_seq. Answers {messages, next_after_seq}: pass next_after_seq back as after_seq for the next page (null once a page comes back short: there is no more).',
      inputSchema: z.strictObject({
        session_id: SessionIdArg,
        after_seq: z
          .number()
          .int()
          .min(0)
          .max(2_147_483_647)
          .optional()
          .describe('Only messages with a greater seq (default 0: from the first)'),
        limit: z
          .number()
          .int()
          .min(1)
          .max(1000)
          .optional()
          .describe('At most this many (1-1000, default 50)'),
      }),
      annotations: READ,
    },
    guarded('messages_list', log, async ({ session_id, after_seq, limit }) => {
      const scope = readScopeFor(access);
      await requireSession(store, scope, session_id);
      const max = limit ?? 50;
      const messages = await store.listMessages(scope, session_id, { after_seq: after_seq ?? 0, limit: max });
      const last = messages.at(-1);
      return { messages, next_after_seq: messages.length === max && last ? last.seq : null };
    }),
  );

  server.registerTool(
    'tasks_open',
    {
      title: 'List open tasks',
      description:
        'Lists tasks that are not finished (INIT, COLLECTING, CONFIRMING, EXECUTING, FAILED), newest first, each with its status line. Answers {items, next_cursor}.',
      inputSchema: z.strictObject({
        session_id: SessionIdArg.optional().describe('Only the tasks of this session'),
        type: z.string().min(1).max(256).optional().describe('Only tasks of this type'),
        limit: LimitArg.optional(),
        cursor: CursorArg.optional(),
        user_id: UserIdArg.optional(),
      }),
      annotations: READ,
    },
    guarded('tasks_open', log, async ({ session_id, type, limit, cursor, user_id }) => {
      const page = await store.listTasks(readScopeFor(access, user_id), {
        state: OPEN_TASK_STATES,
        limit: limit ?? 50,
        ...(session_id === undefined ? {} : { session_id }),
        ...(type === undefined ? {} : { type }),
        ...(cursor === undefined ? {} : { cursor }),
      });
      return { items: page.items.map(taskSummary), next_cursor: page.next_cursor };
    }),
  );

  server.registerTool(
    'actions_attention',
    {
      title: 'Actions needing attention',
      description:
        "Lists tool calls a person should look at: UNKNOWN ones (the call may or may not have taken effect; only a person or a lookup can settle it) and PENDING ones not updated for pending_older_than_seconds (a run that stopped mid-call). Each comes with its task's state and status line. Answers {items}.",
      inputSchema: z.strictObject({
        limit: z.number().int().min(1).max(100).optional().describe('At most this many (1-100, default 20)'),
        pending_older_than_seconds: z
          .number()
          .int()
          .min(0)
          .max(315_360_000)
          .optional()
          .describe(`PENDING actions count once this old (default ${DEFAULT_STALE_SECONDS})`),
        user_id: UserIdArg.optional(),
      }),
      annotations: READ,
    },
    guarded('actions_attention', log, async ({ limit, pending_older_than_seconds, user_id }) => {
      const scope = readScopeFor(access, user_id);
      const max = limit ?? 20;
      const unknown = (await store.listActions(scope, { status: 'UNKNOWN', limit: max })).items;
      const found: { action: Action; reason: string }[] = unknown.map((action) => ({
        action,
        reason: action.note ?? 'the outcome is unknown',
      }));
      const staleSeconds = pending_older_than_seconds ?? DEFAULT_STALE_SECONDS;
      const before = Date.now() - staleSeconds * 1000;
      let cursor: string | null = null;
      for (let pages = 0; found.length < max && pages < PENDING_SCAN_PAGES; pages++) {
        const page = await store.listActions(scope, { status: 'PENDING', limit: PENDING_SCAN, cursor });
        for (const action of page.items) {
          if (found.length >= max) break;
          if (Date.parse(action.updated_at) <= before) {
            found.push({ action, reason: `PENDING since ${action.updated_at}: its run may have stopped` });
          }
        }
        cursor = page.next_cursor;
        if (cursor === null) break;
      }
      const tasks = new Map<string, Task | null>();
      for (const { action } of found) {
        if (!tasks.has(action.task_id)) tasks.set(action.task_id, await store.getTask(scope, action.task_id));
      }
      return {
        items: found.map(({ action, reason }) => {
          const task = tasks.get(action.task_id) ?? null;
          return {
            ...action,
            reason,
            task:
              task === null ? null : { type: task.type, state: task.state, status_line: task.status_line },
          };
        }),
      };
    }),
  );
}
