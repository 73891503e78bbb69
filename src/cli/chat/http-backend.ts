/**
 * The chat over the HTTP API (`--server URL`, with `--token` or AGENTSTATE_TOKEN when the server has keys),
 * through agentstate/client: a turn carries an Idempotency-Key, so one sent again after a broken connection
 * runs once; a rate limit or a restarting server is waited out. A turn is streamed (`streamTurn`): its
 * events reach the screen as they happen, and a stream that breaks is taken up again where it stopped.
 */
import {
  type AgentStateClient,
  type AgentStateHttpError,
  createClient,
  isAgentStateHttpError,
  isFinalRunEvent,
  type Message,
  type RunEvent,
  type SessionWithTasks,
  type TurnResult,
} from '../../client/index.js';
import type { Session, Task } from '../../core/model.js';
import { CliError } from '../context.js';
import { assertOpen, type ChatBackend, type OpenedSession, type TurnView } from './backend.js';

/** What the CLI says of a failed request: the server's message, or that it could not be reached. */
function cliErrorOf(error: AgentStateHttpError): CliError {
  return new CliError(error.code === 'network' ? error.message : `${error.message} (${error.code})`);
}

async function calling<T>(call: Promise<T>): Promise<T> {
  try {
    return await call;
  } catch (error) {
    throw isAgentStateHttpError(error) ? cliErrorOf(error) : error;
  }
}

/**
 * The API's records are the model's records as JSON. The generated types name JSON values more loosely than
 * the model's (`JsonValue` versus its object types), so they meet here, once.
 */
const asSession = (session: object) => session as Session;
const asTasks = (tasks: readonly object[]) => tasks as Task[];

/** The turn's answer from its run's final event; a run that failed or was cancelled is an error. */
function turnViewOf(final: RunEvent | null): TurnView {
  if (final?.type === 'run.completed') {
    const turn = final.data as unknown as TurnResult;
    return { reply: turn.reply, tasks: asTasks(turn.tasks) };
  }
  if (final?.type === 'run.failed') {
    const error = final.data.error as { code?: unknown; message?: unknown } | undefined;
    const message = typeof error?.message === 'string' ? error.message : 'the run failed';
    throw new CliError(typeof error?.code === 'string' ? `${message} (${error.code})` : message);
  }
  throw new CliError(final === null ? 'the turn ended without an answer' : 'the run was cancelled');
}

export function createHttpBackend(
  base: string,
  token: string | undefined,
  user: string | undefined,
): ChatBackend {
  const client: AgentStateClient = createClient({ baseUrl: base, token: token ?? null });
  const root = client.transport.baseUrl;
  const openTasks = async (id: string): Promise<Task[]> =>
    asTasks((await calling(client.sessions.get(id))).open_tasks);

  async function lastSeq(sessionId: string): Promise<number> {
    let cursor = 0;
    for (;;) {
      const page = await calling(client.messages.list(sessionId, { after_seq: cursor, limit: 1000 }));
      cursor = page.items.at(-1)?.seq ?? cursor;
      if (page.next_cursor === null) return cursor;
    }
  }

  return {
    where: `server ${root}`,
    async open(sessionId, agent, model): Promise<OpenedSession> {
      if (sessionId === undefined) {
        const session = await calling(
          client.sessions.create({
            agent,
            ...(model === undefined ? {} : { model }),
            ...(user ? { user_id: user } : {}),
          }),
        );
        // A new session shows the open tasks it carries over from the user's ended sessions.
        return {
          session: asSession(session),
          tasks: await openTasks(session.id),
          recent: [],
          ...(session.model === undefined ? {} : { model: session.model }),
        };
      }
      const session: SessionWithTasks = await calling(client.sessions.get(sessionId));
      assertOpen(asSession(session));
      const last = Math.max(0, (await lastSeq(sessionId)) - 6);
      const recent: Message[] = (await calling(client.messages.list(sessionId, { after_seq: last }))).items;
      return {
        session: asSession(session),
        tasks: asTasks(session.open_tasks),
        recent: recent as OpenedSession['recent'],
        ...(session.model === undefined ? {} : { model: session.model }),
      };
    },
    async turn(sessionId, input, onEvent): Promise<TurnView> {
      let final: RunEvent | null = null;
      try {
        for await (const event of client.streamTurn(sessionId, input)) {
          if (isFinalRunEvent(event.type)) final = event;
          else onEvent?.(event);
        }
      } catch (error) {
        throw isAgentStateHttpError(error) ? cliErrorOf(error) : error;
      }
      return turnViewOf(final);
    },
    openTasks,
    async close() {},
  };
}
