/** What the terminal chat talks to: an HTTP server (`--server`) or a store directly (`--store`). */
import type { Message, Session, Task } from '../../core/model.js';
import { CliError } from '../context.js';
import type { LiveEvent } from './live.js';

export interface TurnView {
  readonly reply: string;
  readonly tasks: readonly Task[];
}

export interface OpenedSession {
  readonly session: Session;
  readonly tasks: readonly Task[];
  /** The newest messages, oldest first, to show when coming back to a session. */
  readonly recent: readonly Message[];
  /** The model the session's turns run with, when known. */
  readonly model?: string;
}

export interface ChatBackend {
  /** Where the chat runs, for the banner: `server http://...` or `store sqlite:...`. */
  readonly where: string;
  /** Comes back to `sessionId`, or starts a new session of `agent` (with `model`, or the server's choice). */
  open(sessionId: string | undefined, agent: string, model?: string): Promise<OpenedSession>;
  /**
   * Runs a turn; `onEvent` is told of the run's events as they happen (the reply's pieces, task and action
   * changes), all but the final one.
   */
  turn(sessionId: string, input: string, onEvent?: (event: LiveEvent) => void): Promise<TurnView>;
  openTasks(sessionId: string): Promise<Task[]>;
  close(): Promise<void>;
}

/** A session that has ended (or expired) takes no more turns: refused when the chat opens it. */
export function assertOpen(session: Session): void {
  if (session.status === 'ended' || session.status === 'expired') {
    throw new CliError(
      `session ${session.id} has ${session.status}; start a new session (leave out --session)`,
    );
  }
}
