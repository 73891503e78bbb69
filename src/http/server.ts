/**
 * `createServer({ store, config })`: the HTTP API of SPEC 5 as a fastify instance (not yet listening).
 * The caller owns the store: closing the server does not close it (see `shutdown.ts` for `serve`).
 */
import { createHash, randomUUID } from 'node:crypto';
import rateLimit from '@fastify/rate-limit';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import Fastify, { type FastifyBaseLogger, type FastifyRequest } from 'fastify';
import {
  jsonSchemaTransform,
  jsonSchemaTransformObject,
  validatorCompiler,
  type ZodTypeProvider,
} from 'fastify-type-provider-zod';
import { AgentStateError } from '../core/errors.js';
import { type InspectorOptions, isInspectorPath, registerInspector } from '../inspector/index.js';
import type { MetricsFormat } from '../observability/exposition.js';
import type { AgentStateMetrics } from '../observability/metrics.js';
import {
  assertStartable,
  DEFAULT_TENANT,
  type HttpConfig,
  type HttpConfigInput,
  resolveConfig,
} from '../server/config.js';
import type { RuntimeSetup } from '../server/runtime-runner.js';
import type { TurnRunner } from '../server/turn-runner.js';
import type { StateStore } from '../store/types.js';
import { createAuthenticator } from './auth.js';
import { withBodyLimit } from './body-limit.js';
import type { RouteDeps, ZodApp } from './deps.js';
import { clientErrorHandler, errorHandler, frameworkErrorHandler, MAX_PATH_PARAM_CHARS } from './errors.js';
import { registerIdempotency } from './idempotency.js';
import { registerJsonBody } from './json-body.js';
import { registerMetrics } from './metrics.js';
import { withEventStreams } from './openapi-streams.js';
import { registerRoutes } from './routes/index.js';
import { buildSchemas } from './schemas.js';
import { createStdoutLogger } from './stdout-log.js';
import { meteredTurns } from './turn-metrics.js';

export interface ServerOptions {
  readonly store: StateStore;
  /** A complete configuration, or a partial one completed with the documented defaults. */
  readonly config?: HttpConfig | HttpConfigInput;
  /**
   * The agents (with their models and tools) that run turns: the server builds the runtime from them.
   * Without `agents` or `turns`, turns, resume and checkpoints answer 501 `not_implemented`.
   */
  readonly agents?: RuntimeSetup;
  /** The runtime behind turns, resume and checkpoints, when built by the caller (wins over `agents`). */
  readonly turns?: TurnRunner | null;
  /** A pino logger; `false` for none. Default: JSON logs on stdout at level `AGENTSTATE_LOG_LEVEL` or info. */
  readonly logger?: FastifyBaseLogger | false;
  /** Prometheus metrics: serves `GET /metrics` (no token needed) and counts requests. Default: none. */
  readonly metrics?: AgentStateMetrics;
  /**
   * What `GET /metrics` answers, in the format the scraper asked for (`prometheus` text or `openmetrics`).
   * Default: `metrics.registry` rendered in that format (a cluster worker passes its own).
   */
  readonly collectMetrics?: (format: MetricsFormat) => Promise<string>;
  /** The time used to check token expiry. Default: the system clock. */
  readonly now?: () => number;
  /** The inspector page at `/` (SPEC 5). Default: served, describing the agents of `agents`; `false`: not served. */
  readonly inspector?: InspectorOptions | false;
}

const PUBLIC_PATHS = new Set(['/healthz', '/readyz', '/openapi.json', '/metrics']);
const REQUEST_ID = /^[A-Za-z0-9._-]{1,64}$/;

function isComplete(config: HttpConfig | HttpConfigInput | undefined): config is HttpConfig {
  return (
    config !== undefined &&
    config.apiKeys instanceof Map &&
    'limits' in config &&
    typeof config.host === 'string'
  );
}

/** Decided by the route that matched (its pattern), never by the raw URL, so no URL trick skips auth. */
function isPublic(request: FastifyRequest): boolean {
  const route = request.routeOptions.url;
  if (route === undefined) return false;
  return PUBLIC_PATHS.has(route) || isInspectorPath(route) || route === '/docs' || route.startsWith('/docs/');
}

export async function createServer(options: ServerOptions): Promise<ZodApp> {
  const config = isComplete(options.config) ? options.config : resolveConfig(options.config);
  assertStartable(config);
  const { store } = options;
  const loggerOption =
    options.logger === false
      ? { logger: false as const }
      : options.logger !== undefined
        ? { loggerInstance: options.logger }
        : { loggerInstance: createStdoutLogger(process.env.AGENTSTATE_LOG_LEVEL ?? 'info') };
  const app = Fastify({
    ...loggerOption,
    bodyLimit: config.limits.bodyLimitBytes,
    return503OnClosing: true,
    routerOptions: { maxParamLength: MAX_PATH_PARAM_CHARS },
    frameworkErrors: frameworkErrorHandler,
    clientErrorHandler,
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
  }).withTypeProvider<ZodTypeProvider>();

  // Fastify hands the validator a missing body as null: for a route whose body is optional, null is "none sent".
  app.setValidatorCompiler((route: Parameters<typeof validatorCompiler>[0]) => {
    const validate = validatorCompiler(route);
    return route.httpPart === 'body'
      ? (data: unknown) => validate(data === null ? undefined : data)
      : validate;
  });
  // Responses are records the store already checked; they are sent as JSON, the schemas document them.
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
  // A body over the limit: a 413 naming it, and the rest of the body drained (bounded) so the client reads it.
  app.setErrorHandler(withBodyLimit(errorHandler, config.limits.bodyLimitBytes));
  app.setNotFoundHandler((request) => {
    throw new AgentStateError('not_found', `no route ${request.method} ${request.url.split('?')[0]}`);
  });
  registerJsonBody(app);
  app.decorateRequest('principal', null as never);

  const auth = createAuthenticator(config, options.now);
  if (config.apiKeys.size === 0) {
    app.log.warn(
      `no API keys configured: accepting unauthenticated requests on loopback only, as tenant "${DEFAULT_TENANT}"`,
    );
  }

  app.addHook('onRequest', async (request, reply) => {
    void reply.header('x-request-id', request.id);
    if (isPublic(request)) return;
    request.principal = await auth.authenticate(request.headers.authorization, request.socket.localAddress);
  });

  await app.register(rateLimit, {
    global: true,
    max: config.limits.rateLimitMax,
    timeWindow: config.limits.rateLimitWindowMs,
    keyGenerator: (request) => {
      const header = request.headers.authorization;
      return header ? `t:${createHash('sha256').update(header).digest('hex')}` : `ip:${request.ip}`;
    },
    allowList: (request) => isPublic(request),
    errorResponseBuilder: (_request, context) =>
      Object.assign(new AgentStateError('rate_limited', `too many requests; retry in ${context.after}`), {
        statusCode: 429,
      }),
  });

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'agentstate', description: 'The state layer for AI agents (SPEC 5).', version: '1' },
      components: {
        securitySchemes: {
          bearer: { type: 'http', scheme: 'bearer', description: 'tenant API key or user token' },
        },
      },
      security: [{ bearer: [] }],
    },
    transform: jsonSchemaTransform,
    // The schemas the routes share (a JSON value, ...) as components, which the routes' $refs name.
    transformObject: jsonSchemaTransformObject,
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });

  if (options.metrics) registerMetrics(app, options.metrics, options.collectMetrics);
  registerIdempotency(app, store, config.limits.idempotencyTtlSeconds);
  let turns = options.turns ?? null;
  if (turns === null && options.agents !== undefined) {
    const { createRuntimeTurnRunner } = await import('../server/runtime-runner.js');
    turns = createRuntimeTurnRunner(store, options.agents);
  }
  if (turns !== null && options.metrics) turns = meteredTurns(turns, options.metrics, store);
  const deps: RouteDeps = { store, config, schemas: buildSchemas(config.limits), auth, turns };
  await app.register(async (scoped) => registerRoutes(scoped as unknown as ZodApp, deps));
  // MCP over Streamable HTTP at /mcp, with the same credentials (docs/mcp.md); its SDK loads only here.
  const { registerMcpHttp } = await import('../mcp/http.js');
  await app.register(async (scoped) =>
    registerMcpHttp(scoped as unknown as ZodApp, { store, runtime: turns }),
  );
  app.get('/openapi.json', { schema: { hide: true } }, async () => withEventStreams(app.swagger()));
  if (options.inspector !== false) {
    const inspector = options.inspector ?? {};
    const agents = inspector.agents ?? options.agents?.agents;
    await registerInspector(
      app as unknown as ZodApp,
      agents === undefined ? inspector : { ...inspector, agents },
    );
  }
  return app as unknown as ZodApp;
}
