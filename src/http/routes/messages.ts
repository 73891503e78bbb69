/** A session's messages: append (each gets its gap-free `seq`) and page through them. */

import { z } from 'zod';
import { MessageSchema } from '../../core/model.js';
import { readScopeOf } from '../auth.js';
import type { RouteDeps, ZodApp } from '../deps.js';
import { pageOf, SessionParams } from '../schemas.js';
import { ERRORS, requireOpenSession, requireSession } from './common.js';

export function messageRoutes(app: ZodApp, { store, schemas }: RouteDeps): void {
  app.post(
    '/v1/sessions/:id/messages',
    {
      schema: {
        tags: ['messages'],
        params: SessionParams,
        body: schemas.appendMessages,
        response: { 201: z.object({ items: z.array(MessageSchema) }), ...ERRORS },
      },
    },
    async (request, reply) => {
      const scope = readScopeOf(request.principal);
      await requireOpenSession(store, scope, request.params.id, 'more messages');
      const items = await store.appendMessages(scope, request.params.id, request.body.messages);
      return reply.status(201).send({ items });
    },
  );

  app.get(
    '/v1/sessions/:id/messages',
    {
      schema: {
        tags: ['messages'],
        params: SessionParams,
        querystring: schemas.listMessages,
        response: { 200: pageOf(MessageSchema), ...ERRORS },
      },
    },
    async (request) => {
      const scope = readScopeOf(request.principal);
      await requireSession(store, scope, request.params.id);
      const limit = request.query.limit ?? 100;
      const after_seq =
        request.query.cursor !== undefined ? Number(request.query.cursor) : request.query.after_seq;
      const items = await store.listMessages(scope, request.params.id, { after_seq: after_seq ?? 0, limit });
      const last = items.at(-1);
      return { items, next_cursor: items.length === limit && last ? String(last.seq) : null };
    },
  );
}
