/**
 * Routes that run the agent: a turn, resuming an interrupted run, the run's checkpoints. They need the
 * runtime (`ServerOptions.turns`) and answer 501 `not_implemented` without it.
 *
 * Two turns of one session at once never interleave: the runtime holds a lease on the session for the
 * whole turn, so the second request answers 409 (`conflict`) and may be sent again once the first is done.
 */
import { CheckpointSchema, type Session } from '../../core/model.js';
import { type SessionRef, TurnResponseSchema, type TurnRunner } from '../../server/turn-runner.js';
import type { Scope } from '../../store/types.js';
import { readScopeOf } from '../auth.js';
import type { RouteDeps, ZodApp } from '../deps.js';
import { notImplemented } from '../errors.js';
import { wantsEventStream } from '../run-stream.js';
import { pageOf, SessionParams } from '../schemas.js';
import { ERRORS, requireSession } from './common.js';
import { streamTurn } from './turn-stream.js';

function ownerScope(session: Session): Scope {
  return { tenant_id: session.tenant_id, user_id: session.user_id };
}

function requireRunner(turns: TurnRunner | null, what: string): TurnRunner {
  if (turns === null) throw notImplemented(what);
  return turns;
}

export function turnRoutes(app: ZodApp, { store, schemas, turns }: RouteDeps): void {
  app.post(
    '/v1/sessions/:id/turns',
    {
      schema: {
        tags: ['turns'],
        description:
          'Runs one turn. With `Accept: text/event-stream` the answer is the run’s events as Server-Sent Events, from `run.started` to its final event (whose data is this JSON answer); see GET /v1/sessions/{id}/runs/{run_id}/events to resume after a disconnect.',
        params: SessionParams,
        body: schemas.turn,
        response: { 200: TurnResponseSchema, ...ERRORS },
      },
    },
    async (request, reply) => {
      const { principal } = request;
      if (turns === null) await requireSession(store, readScopeOf(principal), request.params.id);
      const runner = requireRunner(turns, 'a turn');
      // A user's own session: the runtime reads it under the turn's lease, in the user's scope (another
      // user's session is not found there). A tenant key's turn runs in the scope of the session's owner.
      let scope: Scope;
      let session: SessionRef;
      if (principal.kind === 'user') {
        scope = { tenant_id: principal.tenant_id, user_id: principal.user_id };
        session = { id: request.params.id };
      } else {
        const found = await requireSession(store, readScopeOf(principal), request.params.id);
        scope = ownerScope(found);
        session = found;
      }
      const { input, on_busy } = request.body;
      const key = request.headers['idempotency-key'];
      const call = {
        ...(on_busy === undefined ? {} : { onBusy: on_busy }),
        ...(typeof key === 'string' ? { requestKey: key } : {}),
      };
      if (!wantsEventStream(request.headers.accept)) return runner.runTurn(scope, session, input, call);
      return streamTurn({ store, runner, scope, session, input, call, request, reply });
    },
  );

  app.post(
    '/v1/sessions/:id/resume',
    {
      schema: {
        tags: ['turns'],
        params: SessionParams,
        body: schemas.resume.optional(),
        response: { 200: TurnResponseSchema, ...ERRORS },
      },
    },
    async (request) => {
      const session = await requireSession(store, readScopeOf(request.principal), request.params.id);
      return requireRunner(turns, 'resuming a run').resume(ownerScope(session), session);
    },
  );

  app.get(
    '/v1/sessions/:id/checkpoints',
    {
      schema: {
        tags: ['turns'],
        params: SessionParams,
        querystring: schemas.checkpoints,
        response: { 200: pageOf(CheckpointSchema), ...ERRORS },
      },
    },
    async (request) => {
      const scope = readScopeOf(request.principal);
      const session = await requireSession(store, scope, request.params.id);
      return requireRunner(turns, 'checkpoint history').checkpoints(
        scope,
        session,
        request.query.limit ?? 20,
        request.query.before ?? null,
      );
    },
  );
}
