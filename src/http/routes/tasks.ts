/**
 * Tasks: list, read, update with If-Match (state changes follow the transition table; a task in a final state
 * takes none), events, actions.
 */
import { z } from 'zod';
import { AgentStateError } from '../../core/errors.js';
import { ActionSchema, FINAL_TASK_STATES, type Task, TaskEventSchema, TaskSchema } from '../../core/model.js';
import type { ReadScope, StateStore } from '../../store/types.js';
import { readScopeOf } from '../auth.js';
import type { RouteDeps, ZodApp } from '../deps.js';
import { IfMatchHeaders, pageOf, TaskParams, versionOfIfMatch } from '../schemas.js';
import { ERRORS, etag, notFound } from './common.js';

async function requireTask(store: StateStore, scope: ReadScope, id: string): Promise<Task> {
  const task = await store.getTask(scope, id);
  if (task === null) throw notFound('task', id);
  return task;
}

export function taskRoutes(app: ZodApp, { store, schemas }: RouteDeps): void {
  app.get(
    '/v1/tasks',
    {
      schema: {
        tags: ['tasks'],
        querystring: schemas.listTasks,
        response: { 200: pageOf(TaskSchema), ...ERRORS },
      },
    },
    async (request) => {
      const { user_id, ...query } = request.query;
      return store.listTasks(readScopeOf(request.principal, user_id), query);
    },
  );

  app.get(
    '/v1/tasks/:id',
    { schema: { tags: ['tasks'], params: TaskParams, response: { 200: TaskSchema, ...ERRORS } } },
    async (request, reply) => {
      const task = await requireTask(store, readScopeOf(request.principal), request.params.id);
      return reply.header('etag', etag(task.version)).send(task);
    },
  );

  app.patch(
    '/v1/tasks/:id',
    {
      schema: {
        tags: ['tasks'],
        params: TaskParams,
        headers: IfMatchHeaders,
        body: schemas.patchTask,
        response: { 200: TaskSchema, ...ERRORS },
      },
    },
    async (request, reply) => {
      const scope = readScopeOf(request.principal);
      const current = await requireTask(store, scope, request.params.id);
      const version = versionOfIfMatch(request.headers['if-match']);
      // A task in a final state (DONE, CANCELLED) is closed: no slot, status line or state changes after it.
      if (FINAL_TASK_STATES.includes(current.state)) {
        throw new AgentStateError(
          'illegal_transition',
          `task ${current.id} is ${current.state}, a final state, and takes no more changes`,
          { details: { task_id: current.id, state: current.state } },
        );
      }
      const task = await store.updateTask(scope, request.params.id, version, request.body);
      return reply.header('etag', etag(task.version)).send(task);
    },
  );

  app.get(
    '/v1/tasks/:id/events',
    {
      schema: {
        tags: ['tasks'],
        params: TaskParams,
        response: { 200: z.object({ items: z.array(TaskEventSchema) }), ...ERRORS },
      },
    },
    async (request) => {
      const scope = readScopeOf(request.principal);
      await requireTask(store, scope, request.params.id);
      return { items: await store.listTaskEvents(scope, request.params.id) };
    },
  );

  app.get(
    '/v1/tasks/:id/actions',
    {
      schema: {
        tags: ['tasks'],
        params: TaskParams,
        querystring: schemas.listActions,
        response: { 200: pageOf(ActionSchema), ...ERRORS },
      },
    },
    async (request) => {
      const scope = readScopeOf(request.principal);
      await requireTask(store, scope, request.params.id);
      return store.listActions(scope, { ...request.query, task_id: request.params.id });
    },
  );
}
