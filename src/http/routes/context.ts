/**
 * `GET /v1/sessions/{id}/context?max_tokens`: what one model call of the session would see, from the
 * context builder (open tasks' state, the user's memory, a summary of older turns, the newest messages that
 * fit), or from the runtime's own builder when it has one, with the model the session's turns run with.
 */
import { buildContext } from '../../context/index.js';
import { ContextResponseSchema } from '../../server/turn-runner.js';
import { readScopeOf } from '../auth.js';
import type { RouteDeps, ZodApp } from '../deps.js';
import { SessionParams } from '../schemas.js';
import { ERRORS, requireSession } from './common.js';

const DEFAULT_MAX_TOKENS = 4000;

export function contextRoutes(app: ZodApp, { store, schemas, turns }: RouteDeps): void {
  app.get(
    '/v1/sessions/:id/context',
    {
      schema: {
        tags: ['turns'],
        params: SessionParams,
        querystring: schemas.context,
        response: { 200: ContextResponseSchema, ...ERRORS },
      },
    },
    async (request) => {
      const scope = readScopeOf(request.principal);
      const session = await requireSession(store, scope, request.params.id);
      const maxTokens = request.query.max_tokens ?? DEFAULT_MAX_TOKENS;
      if (turns?.context) return turns.context(scope, session, maxTokens);
      const built = await buildContext({ store, scope, sessionId: session.id, maxTokens });
      const model = turns?.modelFor?.(session);
      return {
        ...built,
        messages: built.messages.map((m) => ({ ...m })),
        ...(model === undefined ? {} : { model }),
      };
    },
  );
}
