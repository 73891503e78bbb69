/** Liveness (`/healthz`: the process answers) and readiness (`/readyz`: the store answers too). */
import { z } from 'zod';
import { AgentStateError } from '../../core/errors.js';
import type { RouteDeps, ZodApp } from '../deps.js';
import { ErrorResponseSchema } from '../schemas.js';

export function healthRoutes(app: ZodApp, { store }: RouteDeps): void {
  app.get(
    '/healthz',
    { schema: { tags: ['health'], security: [], response: { 200: z.object({ status: z.literal('ok') }) } } },
    async () => ({ status: 'ok' as const }),
  );

  app.get(
    '/readyz',
    {
      schema: {
        tags: ['health'],
        security: [],
        response: {
          200: z.object({ status: z.literal('ready'), store: z.string() }),
          503: ErrorResponseSchema,
        },
      },
    },
    async () => {
      let up = false;
      try {
        up = await store.ping();
      } catch {
        up = false;
      }
      if (!up) throw new AgentStateError('store_unavailable', `the ${store.adapter} store does not answer`);
      return { status: 'ready' as const, store: store.adapter };
    },
  );
}
