/** What every route group is given: the store, the configuration, the request schemas, the authenticator. */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { HttpConfig } from '../server/config.js';
import type { TurnRunner } from '../server/turn-runner.js';
import type { StateStore } from '../store/types.js';
import type { Authenticator, Principal } from './auth.js';
import type { Schemas } from './schemas.js';

export type ZodApp = FastifyInstance<
  Server,
  IncomingMessage,
  ServerResponse,
  FastifyBaseLogger,
  ZodTypeProvider
>;

export interface RouteDeps {
  readonly store: StateStore;
  readonly config: HttpConfig;
  readonly schemas: Schemas;
  readonly auth: Authenticator;
  /** The agent runtime, when the server has one; routes that need it answer 501 without. */
  readonly turns: TurnRunner | null;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Who is asking; set by the authentication hook before any route runs. */
    principal: Principal;
  }
}
