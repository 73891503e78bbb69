/**
 * Actions: begin one idempotently (201 new, 200 when its key exists for the same request, 409 when it was
 * begun with another task, type, tool or params), list, read, and complete or resolve
 * one. `PATCH` of a PENDING action completes it (or marks it UNKNOWN, with a note); of an UNKNOWN action
 * resolves it, keeping who resolved it in `note`.
 */
import { z } from 'zod';
import { AgentStateError } from '../../core/errors.js';
import { canonicalJson } from '../../core/json.js';
import { ActionSchema, FINAL_TASK_STATES } from '../../core/model.js';
import type { Principal } from '../auth.js';
import { readScopeOf } from '../auth.js';
import type { RouteDeps, ZodApp } from '../deps.js';
import { ActionParams, idParam, PageQueryShape, pageOf } from '../schemas.js';
import { ERRORS, notFound } from './common.js';

const ListActionsQuery = z.strictObject({
  task_id: idParam('task').optional(),
  status: ActionSchema.shape.status.optional(),
  ...PageQueryShape,
});

function who(principal: Principal): string {
  if (principal.kind === 'user') return `user ${principal.user_id}`;
  return principal.kind === 'tenant' ? `tenant key of ${principal.tenant_id}` : 'local operator';
}

export function actionRoutes(app: ZodApp, { store, schemas }: RouteDeps): void {
  app.post(
    '/v1/actions',
    {
      schema: {
        tags: ['actions'],
        body: schemas.createAction,
        response: { 200: ActionSchema, 201: ActionSchema, ...ERRORS },
      },
    },
    async (request, reply) => {
      const task = await store.getTask(readScopeOf(request.principal), request.body.task_id);
      if (task === null) throw notFound('task', request.body.task_id);
      const scope = { tenant_id: task.tenant_id, user_id: task.user_id };
      // A closed task begins no new side effect (a retry of one it began still answers below).
      const closed = FINAL_TASK_STATES.includes(task.state);
      if (closed && (await store.getActionByKey(scope, request.body.idempotency_key)) === null) {
        throw new AgentStateError(
          'illegal_transition',
          `task ${task.id} is ${task.state}, a final state, and begins no more actions`,
          { details: { task_id: task.id, state: task.state } },
        );
      }
      const { action, created } = await store.beginAction(scope, {
        ...request.body,
        session_id: task.session_id,
      });
      // A known key answers its action only for the same request (a retry); a key reused for another task,
      // type, tool or params is a client's mistake that would hide a real side effect: 409, as for request keys.
      if (!created) {
        const { task_id, type, tool = null, params } = request.body;
        const differs =
          action.task_id !== task_id
            ? 'task_id'
            : action.type !== type
              ? 'type'
              : action.tool !== tool
                ? 'tool'
                : canonicalJson(action.params) !== canonicalJson(params)
                  ? 'params'
                  : null;
        if (differs !== null) {
          throw new AgentStateError(
            'conflict',
            `idempotency_key ${JSON.stringify(request.body.idempotency_key)} already names action ${action.id}, begun with another ${differs}; use a new key for another action`,
            { details: { action_id: action.id, field: differs } },
          );
        }
      }
      return reply.status(created ? 201 : 200).send(action);
    },
  );

  app.get(
    '/v1/actions',
    {
      schema: {
        tags: ['actions'],
        querystring: ListActionsQuery,
        response: { 200: pageOf(ActionSchema), ...ERRORS },
      },
    },
    async (request) => store.listActions(readScopeOf(request.principal), request.query),
  );

  app.get(
    '/v1/actions/:id',
    { schema: { tags: ['actions'], params: ActionParams, response: { 200: ActionSchema, ...ERRORS } } },
    async (request) => {
      const action = await store.getAction(readScopeOf(request.principal), request.params.id);
      if (action === null) throw notFound('action', request.params.id);
      return action;
    },
  );

  app.patch(
    '/v1/actions/:id',
    {
      schema: {
        tags: ['actions'],
        params: ActionParams,
        body: schemas.patchAction,
        response: { 200: ActionSchema, ...ERRORS },
      },
    },
    async (request) => {
      const scope = readScopeOf(request.principal);
      const { id } = request.params;
      const action = await store.getAction(scope, id);
      if (action === null) throw notFound('action', id);
      const { status, result, error, note } = request.body;
      // Nothing sent is dropped: a field that the status cannot carry is refused, naming it.
      const refuse = (field: string, why: string) => {
        throw new AgentStateError(
          'invalid_request',
          `body.${field}: not allowed with status ${status}; ${why}`,
          {
            details: { field },
          },
        );
      };
      if (status === 'UNKNOWN') {
        if (result !== undefined) refuse('result', 'an UNKNOWN action has no outcome yet');
        if (error !== undefined) refuse('error', 'an UNKNOWN action has no outcome yet');
        if (note === undefined)
          throw new AgentStateError('invalid_request', 'body.note: required to mark UNKNOWN', {
            details: { field: 'note' },
          });
        return store.markActionUnknown(scope, id, note);
      }
      if (status === 'SUCCESS' && error !== undefined)
        refuse('error', 'a successful action has a result, not an error');
      if (status === 'FAILED' && result !== undefined)
        refuse('result', 'a failed action has an error (put what the tool answered in error.details)');
      const completion = { status, ...(result !== undefined ? { result } : {}), ...(error ? { error } : {}) };
      // A note is kept: resolving (from PENDING or UNKNOWN) records who decided and why.
      if (action.status === 'UNKNOWN' || note !== undefined) {
        return store.resolveAction(scope, id, {
          ...completion,
          note: note ?? `resolved by ${who(request.principal)}`,
        });
      }
      return store.completeAction(scope, id, completion);
    },
  );
}
