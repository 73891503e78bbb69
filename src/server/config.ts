/**
 * Server configuration: one object, a documented default per field, read from the environment or a JSON
 * file. Nothing here touches the network; `assertStartable` says whether a configuration may listen.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { invalidRequest } from '../core/errors.js';
import { type ModelsFile, ModelsFileSchema } from './models.js';

export interface HttpLimits {
  /** Largest request body in bytes. Default 1 MiB. Larger bodies answer 413 `payload_too_large`. */
  readonly bodyLimitBytes: number;
  /** Longest message `content` in characters. Default 32 000. */
  readonly maxMessageChars: number;
  /** Most messages in one `POST .../messages`. Default 100. */
  readonly maxMessagesPerRequest: number;
  /** Longest turn `input` in characters. Default 8 000. */
  readonly maxTurnInputChars: number;
  /** Longest short string (type, tool, key, status line, note...). Default 256. */
  readonly maxShortStringChars: number;
  /** Requests per token (or per client address without one) per `rateLimitWindowMs`. Default 1200. */
  readonly rateLimitMax: number;
  /** Default 60 000 (one minute). */
  readonly rateLimitWindowMs: number;
  /** Longest user token lifetime `POST /v1/tokens` mints. Default 2 592 000 (30 days). */
  readonly maxTokenTtlSeconds: number;
  /** How long an Idempotency-Key answer is kept. Default 86 400 (24 hours). */
  readonly idempotencyTtlSeconds: number;
}

export interface HttpConfig {
  /** Address the server binds to. Default `127.0.0.1`. */
  readonly host: string;
  /** Default 8787. */
  readonly port: number;
  /** Tenant API keys: key -> tenant id. Empty means unauthenticated loopback mode (tenant `default`). */
  readonly apiKeys: ReadonlyMap<string, string>;
  /** HS256 secret for user tokens. Required when `apiKeys` is not empty. */
  readonly jwtSecret: string | null;
  readonly limits: HttpLimits;
}

export const DEFAULT_LIMITS: HttpLimits = {
  bodyLimitBytes: 1024 * 1024,
  maxMessageChars: 32_000,
  maxMessagesPerRequest: 100,
  maxTurnInputChars: 8_000,
  maxShortStringChars: 256,
  rateLimitMax: 1200,
  rateLimitWindowMs: 60_000,
  maxTokenTtlSeconds: 30 * 24 * 3600,
  idempotencyTtlSeconds: 24 * 3600,
};

export const DEFAULT_HOST = '127.0.0.1';
export const DEFAULT_PORT = 8787;
/** The tenant (and user) of unauthenticated loopback mode. */
export const DEFAULT_TENANT = 'default';
export const DEFAULT_USER = 'default';

/** Tenant and user ids: 1-128 characters of letters, digits and `._@:+-`, starting with a letter or digit. */
export const PRINCIPAL_ID = /^[A-Za-z0-9][A-Za-z0-9._@:+-]{0,127}$/;

export interface HttpConfigInput {
  readonly host?: string;
  readonly port?: number;
  readonly apiKeys?: ReadonlyMap<string, string> | Readonly<Record<string, string>>;
  readonly jwtSecret?: string | null;
  readonly limits?: Partial<HttpLimits>;
}

/** A complete configuration from a partial one; the input is never mutated. */
export function resolveConfig(input: HttpConfigInput = {}): HttpConfig {
  const apiKeys =
    input.apiKeys instanceof Map ? new Map(input.apiKeys) : new Map(Object.entries(input.apiKeys ?? {}));
  for (const [key, tenant] of apiKeys) {
    if (!PRINCIPAL_ID.test(tenant))
      throw invalidRequest(`config: tenant id ${JSON.stringify(tenant)} is not valid`);
    if (key.length < 16)
      throw invalidRequest(`config: the API key of tenant ${tenant} is shorter than 16 characters`);
  }
  const limits = { ...DEFAULT_LIMITS, ...(input.limits ?? {}) };
  for (const [name, value] of Object.entries(limits)) {
    if (!Number.isInteger(value) || value <= 0)
      throw invalidRequest(`config: limits.${name} must be a positive integer`);
  }
  const jwtSecret = input.jwtSecret ?? null;
  if (jwtSecret !== null && jwtSecret.length < 32) {
    throw invalidRequest('config: the JWT secret must be at least 32 characters');
  }
  return {
    host: input.host ?? DEFAULT_HOST,
    port: input.port ?? DEFAULT_PORT,
    apiKeys,
    jwtSecret,
    limits,
  };
}

/** `"tenantA:keyA,tenantB:keyB"` -> key -> tenant. */
export function parseApiKeys(text: string): Map<string, string> {
  const keys = new Map<string, string>();
  for (const part of text.split(',')) {
    const entry = part.trim();
    if (entry === '') continue;
    const colon = entry.indexOf(':');
    if (colon <= 0 || colon === entry.length - 1) {
      throw invalidRequest('AGENTSTATE_API_KEYS: each entry must be "tenant:key", separated by commas');
    }
    const key = entry.slice(colon + 1);
    if (keys.has(key)) throw invalidRequest('AGENTSTATE_API_KEYS: the same key is listed twice');
    keys.set(key, entry.slice(0, colon));
  }
  return keys;
}

/** A port in text (an environment variable): a whole number from 0 to 65535, or a sentence naming it. */
function parsePortText(text: string, name: string): number {
  const port = /^\d{1,5}$/.test(text.trim()) ? Number(text.trim()) : Number.NaN;
  if (!Number.isInteger(port) || port > 65_535)
    throw invalidRequest(`${name} must be a port number from 0 to 65535, got ${JSON.stringify(text)}`);
  return port;
}

/**
 * The configuration file: a JSON object of HttpConfigInput's fields, API keys as `{ "<key>": "<tenant>" }`,
 * and the models turns run with (`models`, see models.ts).
 */
const ConfigFileSchema = z.strictObject({
  models: ModelsFileSchema.optional(),
  host: z.string().min(1).optional(),
  port: z.number().int().min(0).max(65_535).optional(),
  apiKeys: z.record(z.string(), z.string()).optional(),
  jwtSecret: z.string().nullable().optional(),
  limits: z
    .strictObject(
      Object.fromEntries(
        Object.keys(DEFAULT_LIMITS).map((name) => [name, z.number().int().positive().optional()]),
      ) as Record<keyof HttpLimits, z.ZodOptional<z.ZodNumber>>,
    )
    .optional(),
});

type ConfigFile = z.infer<typeof ConfigFileSchema>;

/** The configuration file, checked: a clear error naming the file and the field for anything wrong. */
export function readConfigFile(file: string): ConfigFile {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw invalidRequest(`config file ${file}: ${error instanceof Error ? error.message : String(error)}`);
  }
  const checked = ConfigFileSchema.safeParse(parsed);
  if (!checked.success) {
    const issue = checked.error.issues[0];
    const where = issue?.path.length ? issue.path.join('.') : 'the file';
    throw invalidRequest(`config file ${file}: ${where}: ${issue?.message ?? 'is not valid'}`);
  }
  return checked.data;
}

/** The configuration file's `models` section (none without a file). */
export function modelsOfConfigFile(file: string | undefined): ModelsFile | undefined {
  return file === undefined ? undefined : readConfigFile(file).models;
}

/**
 * The configuration from a JSON file (optional) overlaid by the environment:
 * `AGENTSTATE_API_KEYS`, `AGENTSTATE_JWT_SECRET`, `AGENTSTATE_HOST`, `AGENTSTATE_PORT`.
 * The file has the shape of `HttpConfigInput`, with `apiKeys` as an object `{ "<key>": "<tenant>" }`.
 */
export function loadConfig(
  env: Readonly<Record<string, string | undefined>> = process.env,
  file?: string,
  overrides: HttpConfigInput = {},
): HttpConfig {
  const { models: _models, ...fromFile }: ConfigFile = file === undefined ? {} : readConfigFile(file);
  const envKeys = env.AGENTSTATE_API_KEYS ? parseApiKeys(env.AGENTSTATE_API_KEYS) : undefined;
  const envPort = env.AGENTSTATE_PORT ? parsePortText(env.AGENTSTATE_PORT, 'AGENTSTATE_PORT') : undefined;
  return resolveConfig({
    ...fromFile,
    ...(envKeys ? { apiKeys: envKeys } : {}),
    ...(env.AGENTSTATE_JWT_SECRET ? { jwtSecret: env.AGENTSTATE_JWT_SECRET } : {}),
    ...(env.AGENTSTATE_HOST ? { host: env.AGENTSTATE_HOST } : {}),
    ...(envPort !== undefined ? { port: envPort } : {}),
    ...overrides,
    limits: { ...(fromFile.limits ?? {}), ...(overrides.limits ?? {}) },
  });
}

export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127\.\d+\.\d+\.\d+$/.test(h) || h === '::ffff:127.0.0.1';
}

/** Throws when this configuration must not serve: keys without a secret, or no keys off loopback. */
export function assertStartable(config: HttpConfig): void {
  if (config.apiKeys.size > 0 && config.jwtSecret === null) {
    throw invalidRequest(
      'API keys are configured but no JWT secret: set AGENTSTATE_JWT_SECRET (32+ characters)',
    );
  }
  if (config.apiKeys.size === 0 && !isLoopback(config.host)) {
    throw invalidRequest(
      `refusing to serve without API keys on ${config.host}: bind to 127.0.0.1 or set AGENTSTATE_API_KEYS`,
    );
  }
}
