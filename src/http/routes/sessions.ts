/** Sessions: create, list, read (with a summary of open tasks), update with If-Match, end. */
import { invalidRequest } from '../../core/errors.js';
import { OPEN_TASK_STATES, type Session, SessionSchema } from '../../core/model.js';
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
  SessionWithModelSchema,
  SessionWithTasksSchema,
} from './common.js';

/** A model a session names, kept in its context (where the runtime reads its time zone too). */
const MODEL_KEY = 'model';

export function sessionRoutes(app: ZodApp, { store, schemas, turns }: RouteDeps): void {
  const known = turns?.agentNames?.();
  /** A session names an agent the server runs (or none): a turn on any other would only fail later. */
  const checkAgent = (agent: string | null | undefined) => {
    if (known === undefined || typeof agent !== 'string' || known.includes(agent)) return;
    throw invalidRequest(`agent: no agent named ${JSON.stringify(agent)}; known: ${known.join(', ')}`, {
      field: 'agent',
    });
  };
  const models = turns?.modelNames?.();
  /** A model a session names is one the server runs: a 400 naming the choices otherwise. */
  const checkModel = (name: unknown, field: string) => {
    if (models === undefined) {
      throw invalidRequest(`${field}: this server offers no choice of model`, { field });
    }
    if (typeof name === 'string' && models.includes(name)) return;
    throw invalidRequest(
      `${field}: no model named ${JSON.stringify(name)}; choose one of ${models.join(', ')}`,
      { field, choices: models },
    );
  };
  /** The session as answered: with the model its turns run with. */
  const withModel = <T extends Session>(session: T): T & { model?: string } =>
    turns?.modelFor ? { ...session, model: turns.modelFor(session) } : session;

  app.post(
    '/v1/sessions',
    {
      schema: {
        tags: ['sessions'],
        body: schemas.createSession,
        response: { 201: SessionWithModelSchema, ...ERRORS },
      },
    },
    async (request, reply) => {
      const { user_id, model, ...input } = request.body;
      checkAgent(input.agent);
      const named = input.context?.[MODEL_KEY];
      if (model !== undefined) {
        checkModel(model, 'model');
        if (named !== undefined && named !== model) {
          throw invalidRequest('model: differs from context.model; name the model once', { field: 'model' });
        }
      } else if (named !== undefined) {
        checkModel(named, 'context.model');
      }
      const context = model === undefined ? input.context : { ...(input.context ?? {}), [MODEL_KEY]: model };
      const session = await store.createSession(writeScopeOf(request.principal, user_id), {
        ...input,
        ...(context === undefined ? {} : { context }),
      });
      return reply.status(201).header('etag', etag(session.version)).send(withModel(session));
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
      return reply.header('etag', etag(session.version)).send({ ...withModel(session), open_tasks });
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
        response: { 200: SessionWithModelSchema, ...ERRORS },
      },
    },
    async (request, reply) => {
      const scope = readScopeOf(request.principal);
      const current = await requireOpenSession(store, scope, request.params.id, 'changes');
      const version = versionOfIfMatch(request.headers['if-match']);
      checkAgent(request.body.agent);
      // The session keeps the model it named: a new context without one carries it over.
      const given = request.body.context;
      const kept = current.context[MODEL_KEY];
      if (given?.[MODEL_KEY] !== undefined && given[MODEL_KEY] !== kept) {
        checkModel(given[MODEL_KEY], 'context.model');
      }
      const body =
        given !== undefined && given[MODEL_KEY] === undefined && kept !== undefined
          ? { ...request.body, context: { ...given, [MODEL_KEY]: kept } }
          : request.body;
      // A status change without an explicit TTL takes the TTL of that status (waiting_for_user waits longer).
      const { status, ttl_seconds } = body;
      const patch =
        status !== undefined && ttl_seconds === undefined
          ? { ...body, ...sessionStatusPatch(current, status) }
          : body;
      const session = await store.updateSession(scope, request.params.id, version, patch);
      return reply.header('etag', etag(session.version)).send(withModel(session));
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
