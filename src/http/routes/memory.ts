/**
 * A user's long-term memory. The user in the path must be the token's own user (any user of the tenant
 * for a tenant key); any other user's path answers 404, exactly like a key that does not exist.
 */
import { MemoryItemSchema } from '../../core/model.js';
import type { Scope } from '../../store/types.js';
import { type Principal, userScopeOf } from '../auth.js';
import type { RouteDeps, ZodApp } from '../deps.js';
import { MemoryItemParams, MemoryNamespaceParams, pageOf } from '../schemas.js';
import { ERRORS, NO_CONTENT, notFound } from './common.js';

function scopeFor(principal: Principal, params: { user_id: string; namespace: string; key?: string }): Scope {
  const scope = userScopeOf(principal, params.user_id);
  if (scope === null) throw notFound('memory', `${params.namespace}/${params.key ?? ''}`);
  return scope;
}

export function memoryRoutes(app: ZodApp, { store, schemas }: RouteDeps): void {
  const item = '/v1/users/:user_id/memory/:namespace/:key';

  app.put(
    item,
    {
      schema: {
        tags: ['memory'],
        params: MemoryItemParams,
        body: schemas.putMemory,
        response: { 200: MemoryItemSchema, ...ERRORS },
      },
    },
    async (request) => {
      const { namespace, key } = request.params;
      const { value, ttl_seconds } = request.body;
      return store.putMemory(scopeFor(request.principal, request.params), {
        namespace,
        key,
        value,
        ttl_seconds,
      });
    },
  );

  app.get(
    item,
    {
      schema: { tags: ['memory'], params: MemoryItemParams, response: { 200: MemoryItemSchema, ...ERRORS } },
    },
    async (request) => {
      const { namespace, key } = request.params;
      const found = await store.getMemory(scopeFor(request.principal, request.params), namespace, key);
      if (found === null) throw notFound('memory', `${namespace}/${key}`);
      return found;
    },
  );

  app.delete(
    item,
    { schema: { tags: ['memory'], params: MemoryItemParams, response: { ...NO_CONTENT, ...ERRORS } } },
    async (request, reply) => {
      const { namespace, key } = request.params;
      const deleted = await store.deleteMemory(scopeFor(request.principal, request.params), namespace, key);
      if (!deleted) throw notFound('memory', `${namespace}/${key}`);
      return reply.status(204).send(null);
    },
  );

  app.get(
    '/v1/users/:user_id/memory/:namespace',
    {
      schema: {
        tags: ['memory'],
        params: MemoryNamespaceParams,
        querystring: schemas.listMemory,
        response: { 200: pageOf(MemoryItemSchema), ...ERRORS },
      },
    },
    async (request) =>
      store.listMemory(scopeFor(request.principal, request.params), request.params.namespace, request.query),
  );
}
