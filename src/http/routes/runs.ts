/**
 * A run's events: `GET /v1/sessions/{id}/runs/{run_id}/events` replays the events after `Last-Event-ID`
 * (or `?after=`) and, asked with `Accept: text/event-stream`, follows the run to its final event on any
 * instance that shares the store. Without that header it answers the stored events as JSON.
 */
import { z } from 'zod';
import { RunEventSchema } from '../../core/model.js';
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
}
