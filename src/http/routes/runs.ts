/**
 * A run's events: `GET /v1/sessions/{id}/runs/{run_id}/events` replays the events after `Last-Event-ID`
 * (or `?after=`) and, asked with `Accept: text/event-stream`, follows the run to its final event on any
 * instance that shares the store. Without that header it answers the stored events as JSON.
 */
import { z } from 'zod';
import { AgentStateError } from '../../core/errors.js';
import { isFinalRunEvent, RunEventSchema } from '../../core/model.js';
import { requestCancel } from '../../runtime/cancel.js';
import { lastRunEvent } from '../../runtime/run-events.js';
import type { ReadScope } from '../../store/types.js';
import { readScopeOf } from '../auth.js';
import type { RouteDeps, ZodApp } from '../deps.js';
import { sendRunEvents, wantsEventStream } from '../run-stream.js';
import { RunParams } from '../schemas.js';
import { ERRORS, notFound, requireSession } from './common.js';

const EVENT_ID = /^[1-9]\d{0,9}$/;

/** Where a follower starts: `Last-Event-ID` when it is an event id, else `?after=`. */
function startAfter(header: string | string[] | undefined, query: string | undefined): string | null {
  const last = Array.isArray(header) ? header[0] : header;
  if (last !== undefined && EVENT_ID.test(last.trim())) return last.trim();
  return query ?? null;
}

export function runRoutes(app: ZodApp, { store, schemas }: RouteDeps): void {
  app.get(
    '/v1/sessions/:id/runs/:run_id/events',
    {
      schema: {
        tags: ['turns'],
        description:
          'The run’s events after `Last-Event-ID` (or `after`). With `Accept: text/event-stream`: Server-Sent Events (`id`, `event`: the type, `data`: the event as JSON) that follow the run until its final event (`run.completed`, `run.failed` or `run.cancelled`), with keep-alive comments; otherwise the stored events as JSON.',
        params: RunParams,
        querystring: schemas.runEvents,
        response: { 200: z.object({ items: z.array(RunEventSchema) }), ...ERRORS },
      },
    },
    async (request, reply) => {
      const scope: ReadScope = readScopeOf(request.principal);
      const { id, run_id } = request.params;
      await requireSession(store, scope, id);
      const after = startAfter(request.headers['last-event-id'], request.query.after);
      const first = await store.listRunEvents(scope, id, run_id, { after, limit: 1 });
      if (first.length === 0 && after === null) throw notFound('run', run_id);
      if (!wantsEventStream(request.headers.accept)) {
        const items = await store.listRunEvents(scope, id, run_id, {
          after,
          limit: request.query.limit ?? 100,
        });
        return { items };
      }
      return sendRunEvents(request, reply, { store, scope, sessionId: id, runId: run_id, after });
    },
  );

  app.post(
    '/v1/sessions/:id/runs/:run_id/cancel',
    {
      schema: {
        tags: ['turns'],
        description:
          'Asks the run to stop at its next safe point (before a model call that precedes its actions, or before it begins an action; never between an action’s record and its effect), on whichever instance runs it. The run then ends with `run.cancelled`, and a turn waiting for it answers 409. 202 when asked; 409 when the run is already over.',
        params: RunParams,
        response: {
          202: z.object({ session_id: z.string(), run_id: z.string(), cancel_requested: z.literal(true) }),
          ...ERRORS,
        },
      },
    },
    async (request, reply) => {
      const { id, run_id } = request.params;
      const session = await requireSession(store, readScopeOf(request.principal), id);
      const owner = { tenant_id: session.tenant_id, user_id: session.user_id };
      const last = await lastRunEvent(store, owner, id, run_id);
      if (last === null) throw notFound('run', run_id);
      if (isFinalRunEvent(last.type)) {
        throw new AgentStateError('conflict', `run ${run_id} is over (${last.type})`, {
          details: { session_id: id, run_id, last_event: last.type },
        });
      }
      await requestCancel(store, owner, id, run_id);
      return reply.status(202).send({ session_id: id, run_id, cancel_requested: true as const });
    },
  );
}
