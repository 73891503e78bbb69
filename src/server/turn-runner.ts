/**
 * What the HTTP layer needs from the agent runtime, kept to one small interface so the routes do not
 * depend on how the runtime is built. `createServer` adapts the runtime to it when agents are given.
 */
import { z } from 'zod';
import {
  ActionSchema,
  type Checkpoint,
  type Session,
  SessionSchema,
  type Task,
  TaskSchema,
} from '../core/model.js';
import type { Page, ReadScope, Scope } from '../store/types.js';

export const TurnResponseSchema = z.looseObject({
  reply: z.string(),
  session: SessionSchema.nullable(),
  tasks: z.array(TaskSchema),
  actions: z.array(ActionSchema),
  checkpoint_id: z.string().nullable(),
  /** The model the turn ran with. */
  model: z.string().optional(),
});
export type TurnResponse = z.infer<typeof TurnResponseSchema>;

export const ContextResponseSchema = z.looseObject({
  system: z.string(),
  messages: z.array(z.looseObject({ role: z.string(), content: z.string() })),
  token_count: z.number().int(),
  /** The model the session's next turn runs with. */
  model: z.string().optional(),
});
export type ContextResponse = z.infer<typeof ContextResponseSchema>;

/** A session a turn is asked for, by id (a whole Session will do). */
export interface SessionRef {
  readonly id: string;
}

/** What a caller of one turn may add. */
export interface TurnCallOptions {
  /** Called with the id of the run that answers the turn, once it starts (its events can be followed). */
  readonly onRun?: (runId: string) => void;
  /** What to do when the session is busy with another run; default: the session's `on_busy` (on-busy.ts). */
  readonly onBusy?: 'reject' | 'enqueue' | 'interrupt';
  /**
   * The request's Idempotency-Key: a retry whose turn already committed (its answer was lost with the
   * server) is answered with that turn's answer rather than run again.
   */
  readonly requestKey?: string;
}

export interface TurnRunner {
  /** The agents a new session may name; a session naming another one is refused with 400. */
  agentNames?(): string[];
  /** The models a new session may name (`model`); another one is refused with 400 naming these. */
  modelNames?(): string[];
  /** The model the session's turns run with: the one it named, else its agent's, else the default. */
  modelFor?(session: Session): string;
  /**
   * Runs one turn of the session's agent; the answer of `POST /v1/sessions/{id}/turns`. The session is
   * named by id: the runtime reads it under the turn's lease, and a session that is not in `scope` is
   * `not_found`.
   */
  runTurn(scope: Scope, session: SessionRef, input: string, options?: TurnCallOptions): Promise<TurnResponse>;
  /** Resumes an interrupted run of the session; the answer of `POST /v1/sessions/{id}/resume`. */
  resume(scope: Scope, session: SessionRef): Promise<TurnResponse>;
  /** The session's checkpoints, newest first. */
  checkpoints(
    scope: ReadScope,
    session: Session,
    limit: number,
    before: string | null,
  ): Promise<Page<Checkpoint>>;
  /**
   * The open tasks the session's next turn takes up: its own, then (for a session still open) those its
   * user left open in sessions that ended or expired, of its agent's task types (tasks outlive sessions).
   * Absent: the session's own open tasks.
   */
  openTasks?(session: Session): Promise<Task[]>;
  /** What one model call of this session would see; absent to use the plain last-messages fallback. */
  context?(scope: ReadScope, session: Session, maxTokens: number): Promise<ContextResponse>;
}
