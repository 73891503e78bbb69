/** Small helpers the route groups share. */
import { z } from 'zod';
import { AgentStateError } from '../../core/errors.js';
import { type Session, SessionSchema, TaskSchema, TaskStateSchema } from '../../core/model.js';
import type { ReadScope, StateStore } from '../../store/types.js';
import { ErrorResponseSchema } from '../schemas.js';

export function notFound(kind: string, id: string): AgentStateError {
  return new AgentStateError('not_found', `${kind} ${id} not found`, { details: { kind, id } });
}

/** The session, or a 404 that says nothing about whether it exists for someone else. */
export async function requireSession(store: StateStore, scope: ReadScope, id: string): Promise<Session> {
  const session = await store.getSession(scope, id);
  if (session === null) throw notFound('session', id);
  return session;
}

/**
 * The session, as requireSession, when it still takes changes: an ended session keeps its history but takes
 * no more messages, context or TTL (a turn on it is refused the same way), so it cannot be kept alive.
 */
export async function requireOpenSession(
  store: StateStore,
  scope: ReadScope,
  id: string,
  what: string,
): Promise<Session> {
  const session = await requireSession(store, scope, id);
  if (session.status === 'ended') {
    throw new AgentStateError(
      'invalid_request',
      `session ${id} has ended and takes no ${what}; start a new session`,
      {
        details: { session_id: id, status: session.status },
      },
    );
  }
  return session;
}

/** Common error responses, for the OpenAPI document. */
export const ERRORS = {
  400: ErrorResponseSchema,
  401: ErrorResponseSchema,
  404: ErrorResponseSchema,
  409: ErrorResponseSchema,
  413: ErrorResponseSchema,
  429: ErrorResponseSchema,
  503: ErrorResponseSchema,
} as const;

/** 204 No Content, for the OpenAPI document. */
export const NO_CONTENT = { 204: z.null().describe('No content') } as const;

export const OpenTaskSummarySchema = z.object({
  id: z.string(),
  type: z.string(),
  state: TaskStateSchema,
  status_line: z.string(),
  slots: TaskSchema.shape.slots,
  version: z.number().int(),
});

/** A session as the sessions routes answer it: with the model its turns run with, when the server has agents. */
export const SessionWithModelSchema = SessionSchema.extend({ model: z.string().optional() });

export const SessionWithTasksSchema = SessionWithModelSchema.extend({
  open_tasks: z.array(OpenTaskSummarySchema),
});

export function etag(version: number): string {
  return `"${version}"`;
}
