/** `POST /v1/tokens`: a tenant key mints a user token (HS256 JWT) for one user of its tenant. */
import { z } from 'zod';
import { AgentStateError } from '../../core/errors.js';
import type { RouteDeps, ZodApp } from '../deps.js';
import { ERRORS } from './common.js';

const DEFAULT_TOKEN_TTL_SECONDS = 3600;

const TokenSchema = z.object({
  token: z.string(),
  token_type: z.literal('Bearer'),
  tenant_id: z.string(),
  user_id: z.string(),
  expires_at: z.string(),
});

export function tokenRoutes(app: ZodApp, { auth, schemas }: RouteDeps): void {
  app.post(
    '/v1/tokens',
    { schema: { tags: ['auth'], body: schemas.mintToken, response: { 201: TokenSchema, ...ERRORS } } },
    async (request, reply) => {
      const { principal } = request;
      if (principal.kind !== 'tenant') {
        throw new AgentStateError('unauthorized', 'minting a user token needs a tenant API key');
      }
      const ttl = request.body.ttl_seconds ?? DEFAULT_TOKEN_TTL_SECONDS;
      const { token, expires_at } = await auth.mintUserToken(principal.tenant_id, request.body.user_id, ttl);
      return reply.status(201).send({
        token,
        token_type: 'Bearer' as const,
        tenant_id: principal.tenant_id,
        user_id: request.body.user_id,
        expires_at,
      });
    },
  );
}
