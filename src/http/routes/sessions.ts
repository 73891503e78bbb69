/** Sessions: create, list, read (with a summary of open tasks), update with If-Match, end. */
import { invalidRequest } from '../../core/errors.js';
import { OPEN_TASK_STATES, SessionSchema } from '../../core/model.js';
import { sessionStatusPatch } from '../../lifecycle/session-policy.js';
import { readScopeOf, writeScopeOf } from '../auth.js';
import type { RouteDeps, ZodApp } from '../deps.js';
import { IfMatchHeaders, pageOf, SessionParams, versionOfIfMatch } from '../schemas.js';
import {
  ERRORS,
  etag,
  NO_CONTENT,
  requireOpenSession,
  requireSession,
  SessionWithTasksSchema,
} from './common.js';

export function sessionRoutes(app: ZodApp, { store, schemas, turns }: RouteDeps): void {
  const known = turns?.agentNames?.();
  /** A session names an agent the server runs (or none): a turn on any other would only fail later. */
  const checkAgent = (agent: string | null | undefined) => {
    if (known === undefined || typeof agent !== 'string' || known.includes(agent)) return;
    throw invalidRequest(`agent: no agent named ${JSON.stringify(agent)}; known: ${known.join(', ')}`, {
      field: 'agent',
    });
  };
  app.post(
    '/v1/sessions',
    {
      schema: {
        tags: ['sessions'],
        body: schemas.createSession,
        response: { 201: SessionSchema, ...ERRORS },
      },
    },
    async (request, reply) => {
      const { user_id, ...input } = request.body;
      checkAgent(input.agent);
      const session = await store.createSession(writeScopeOf(request.principal, user_id), input);
      return reply.status(201).header('etag', etag(session.version)).send(session);
    },
  );

  app.get(
    '/v1/sessions',
    {
      schema: {
        tags: ['sessions'],
        querystring: schemas.listSessions,
        response: { 200: pageOf(SessionSchema), ...ERRORS },
      },
    },
    async (request) => {
      const { user_id, ...query } = request.query;
      return store.listSessions(readScopeOf(request.principal, user_id), query);
    },
  );

  app.get(
    '/v1/sessions/:id',
    {
      schema: {
        tags: ['sessions'],
        params: SessionParams,
        response: { 200: SessionWithTasksSchema, ...ERRORS },
      },
    },
    async (request, reply) => {
      const scope = readScopeOf(request.principal);
      const session = await requireSession(store, scope, request.params.id);
      const tasks = turns?.openTasks
        ? await turns.openTasks(session)
        : (await store.listTasks(scope, { session_id: session.id, state: OPEN_TASK_STATES, limit: 100 }))
            .items;
      const open_tasks = tasks.map(({ id, type, state, status_line, slots, version }) => ({
        id,
        type,
        state,
        status_line,
        slots,
        version,
      }));
      return reply.header('etag', etag(session.version)).send({ ...session, open_tasks });
    },
  );

  app.patch(
    '/v1/sessions/:id',
    {
      schema: {
        tags: ['sessions'],
        params: SessionParams,
        headers: IfMatchHeaders,
        body: schemas.patchSession,
        response: { 200: SessionSchema, ...ERRORS },
      },
    },
    async (request, reply) => {
      const scope = readScopeOf(request.principal);
      const current = await requireOpenSession(store, scope, request.params.id, 'changes');
      const version = versionOfIfMatch(request.headers['if-match']);
      checkAgent(request.body.agent);
      // A status change without an explicit TTL takes the TTL of that status (waiting_for_user waits longer).
      const { status, ttl_seconds } = request.body;
      const patch =
        status !== undefined && ttl_seconds === undefined
          ? { ...request.body, ...sessionStatusPatch(current, status) }
          : request.body;
      const session = await store.updateSession(scope, request.params.id, version, patch);
      return reply.header('etag', etag(session.version)).send(session);
    },
  );

  app.delete(
    '/v1/sessions/:id',
    { schema: { tags: ['sessions'], params: SessionParams, response: { ...NO_CONTENT, ...ERRORS } } },
    async (request, reply) => {
      const scope = readScopeOf(request.principal);
      await requireSession(store, scope, request.params.id);
      const ended = await store.endSession(scope, request.params.id);
      if (ended === null) await requireSession(store, scope, request.params.id);
      return reply.status(204).send(null);
    },
  );
}
