/** The chat over the HTTP API: `--server URL`, with `--token` (or AGENTSTATE_TOKEN) when the server has keys. */
import type { Message, Session, Task } from '../../core/model.js';
import { CliError } from '../context.js';
import { assertOpen, type ChatBackend, type OpenedSession, type TurnView } from './backend.js';

interface ErrorBody {
  error?: { code?: string; message?: string };
}

export function createHttpBackend(
  base: string,
  token: string | undefined,
  user: string | undefined,
): ChatBackend {
  const root = base.replace(/\/+$/, '');
  async function request<T>(method: string, path: string, body?: unknown): Promise<T> {
    const headers: Record<string, string> = {};
    if (token) headers.authorization = `Bearer ${token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    let response: Response;
    try {
      response = await fetch(`${root}${path}`, {
        method,
        headers,
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
    } catch (error) {
      const cause = (error as { cause?: { code?: string } }).cause?.code ?? (error as Error).message;
      throw new CliError(`cannot reach the server at ${root} (${cause})`);
    }
    const parsed = (await response.json().catch(() => ({}))) as T & ErrorBody;
    if (!response.ok) {
      throw new CliError(
        parsed.error?.message ?? `the server answered ${response.status} to ${method} ${path}`,
      );
    }
    return parsed;
  }
  const openTasks = async (id: string): Promise<Task[]> =>
    (await request<{ open_tasks: Task[] }>('GET', `/v1/sessions/${id}`)).open_tasks;
  return {
    where: `server ${root}`,
    async open(sessionId, agent, model): Promise<OpenedSession> {
      if (sessionId === undefined) {
        const session = await request<Session & { model?: string }>('POST', '/v1/sessions', {
          agent,
          ...(model === undefined ? {} : { model }),
          ...(user ? { user_id: user } : {}),
        });
        // A new session shows the open tasks it carries over from the user's ended sessions.
        return {
          session,
          tasks: await openTasks(session.id),
          recent: [],
          ...(session.model === undefined ? {} : { model: session.model }),
        };
      }
      const session = await request<Session & { open_tasks: Task[]; model?: string }>(
        'GET',
        `/v1/sessions/${sessionId}`,
      );
      assertOpen(session);
      const last = Math.max(0, (await lastSeq(sessionId)) - 6);
      const recent = await request<{ items: Message[] }>(
        'GET',
        `/v1/sessions/${sessionId}/messages?after_seq=${last}`,
      );
      return {
        session,
        tasks: session.open_tasks,
        recent: recent.items,
        ...(session.model === undefined ? {} : { model: session.model }),
      };
    },
    async turn(sessionId, input): Promise<TurnView> {
      return request<TurnView>('POST', `/v1/sessions/${sessionId}/turns`, { input });
    },
    openTasks,
    async close() {},
  };

  async function lastSeq(sessionId: string): Promise<number> {
    let cursor = 0;
    for (;;) {
      const page = await request<{ items: Message[]; next_cursor: string | null }>(
        'GET',
        `/v1/sessions/${sessionId}/messages?after_seq=${cursor}&limit=1000`,
      );
      cursor = page.items.at(-1)?.seq ?? cursor;
      if (page.next_cursor === null) return cursor;
    }
  }
}
