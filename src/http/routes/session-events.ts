/**
 * A session's live events: `GET /v1/sessions/{id}/events` with `Accept: text/event-stream` follows the
 * session's runs one after another (session-stream.ts), from the run its next turn will be (one in flight
 * is sent from its start), for as long as the client stays. Frames are those of a run's stream, with `id:`
 * a cursor `<run_id>:<event id>` that `Last-Event-ID` (or `?after=`) takes back to resume after it.
 *
 * The route answers an event stream only: without `Accept: text/event-stream` it is a 400 `invalid_request`
 * (a run's stored events as JSON are at `GET /v1/sessions/{id}/runs/{run_id}/events`). The session must be
 * readable by the caller (404 otherwise, as for the session itself). Streams end when the server closes.
 */
import { z } from 'zod';
import { invalidRequest } from '../../core/errors.js';
import type { ReadScope } from '../../store/types.js';
import { readScopeOf } from '../auth.js';
import type { RouteDeps, ZodApp } from '../deps.js';
import { wantsEventStream } from '../run-stream.js';
import { SessionParams } from '../schemas.js';
import { parseSessionCursor, SESSION_CURSOR, sendSessionEvents } from '../session-stream.js';
import { ERRORS, requireSession } from './common.js';

const Query = z.strictObject({
  after: z
    .string()
    .regex(SESSION_CURSOR, 'is not a cursor of this stream (`<run_id>:<event id>`)')
    .optional(),
});

export function sessionEventRoutes(app: ZodApp, { store }: RouteDeps): void {
  // Open streams end when the server closes, so that closing does not wait for clients that never leave.
  const closing = new AbortController();
  app.addHook('preClose', async () => closing.abort());

  app.get(
    '/v1/sessions/:id/events',
    {
      schema: {
        tags: ['turns'],
        description:
          'The session’s live events, as Server-Sent Events only (ask with `Accept: text/event-stream`; otherwise 400): the events of its runs one after another, from the run its next turn will be (a run in flight from its start) until the client leaves, with keep-alive comments. Frames are those of GET /v1/sessions/{id}/runs/{run_id}/events except `id`, which is `<run_id>:<event id>`; send it back as `Last-Event-ID` (or `after`) to resume after that event.',
        params: SessionParams,
        querystring: Query,
        response: {
          200: {
            description:
              'Server-Sent Events: `id` (`<run_id>:<event id>`), `event` (the type), `data` (the event).',
            content: { 'text/event-stream': { schema: z.string() } },
          },
          ...ERRORS,
        },
      },
    },
    async (request, reply) => {
      const scope: ReadScope = readScopeOf(request.principal);
      const { id } = request.params;
      await requireSession(store, scope, id);
      if (!wantsEventStream(request.headers.accept)) {
        throw invalidRequest(
          'GET /v1/sessions/{id}/events answers Server-Sent Events only: send Accept: text/event-stream',
          { field: 'Accept' },
        );
      }
      const header = request.headers['last-event-id'];
      const start =
        parseSessionCursor(Array.isArray(header) ? header[0] : header) ??
        parseSessionCursor(request.query.after);
      return sendSessionEvents(request, reply, { store, scope, sessionId: id, start }, closing.signal);
    },
  );
}
