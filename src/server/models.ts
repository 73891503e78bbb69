/**
 * The models a server (or a local chat) runs turns with: the offline `rules` model, always there, and any
 * number of OpenAI-compatible Chat Completions endpoints, each under a name. One is the default; an agent may
 * have its own; a session may name one when it is created (kept in its `context.model`).
 *
 * They come from the configuration file's `models` section and from the environment:
 *
 * - `--model NAME` / `AGENTSTATE_MODEL`: the default (else the file's `default`, else `rules`);
 * - the model named `openai`, unless the file defines that name: `OPENAI_BASE_URL` (default
 *   https://api.openai.com/v1), `OPENAI_API_KEY` and the endpoint's model `--openai-model` /
 *   `AGENTSTATE_OPENAI_MODEL` (needed when `openai` is asked for).
 *
 * What is resolved here (`ModelsSpec`) is plain JSON, so a turn thread builds the same models from it. It holds
 * the API keys: it is never logged or answered; `describeModel` is what may be shown.
 */
import { z } from 'zod';
import { invalidRequest } from '../core/errors.js';
import type { JsonObject } from '../core/json.js';
import { endpointOf } from '../models/openai/client.js';
import { createOpenAIModel } from '../models/openai/index.js';
import { createRulesModel } from '../models/rules/index.js';
import { createModelRegistry, type Model, type ModelRegistry } from '../models/types.js';

/** Model names: 1-64 characters of letters, digits and `._:-`, starting with a letter or digit. */
export const MODEL_NAME = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$/;

/** The name of the built-in offline model, and of the model the environment configures. */
export const RULES_MODEL = 'rules';
export const ENV_OPENAI_MODEL = 'openai';
export const DEFAULT_OPENAI_BASE_URL = 'https://api.openai.com/v1';

const HttpUrl = z
  .string()
  .url()
  .refine((text) => /^https?:\/\//i.test(text), 'must be an http:// or https:// URL');

const OpenAISpecSchema = z.strictObject({
  kind: z.literal('openai'),
  /** The endpoint's base URL, for example http://127.0.0.1:11434/v1 (Ollama). */
  baseURL: HttpUrl,
  /** The model's name at the endpoint. */
  model: z.string().min(1).max(200),
  apiKey: z.string().min(1).optional(),
  /** The environment variable that holds the API key (instead of the key in the file). */
  apiKeyEnv: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name')
    .optional(),
  timeoutMs: z.number().int().positive().optional(),
  maxRetries: z.number().int().min(0).max(10).optional(),
  backoffMs: z.number().int().min(0).optional(),
  temperature: z.number().min(0).max(2).optional(),
  stream: z.boolean().optional(),
});

const RulesSpecSchema = z.strictObject({ kind: z.literal('rules') });

const ModelName = z.string().regex(MODEL_NAME, 'must be 1-64 letters, digits or ._:- (a model name)');

/** The configuration file's `models` section. */
export const ModelsFileSchema = z.strictObject({
  default: ModelName.optional(),
  /** Agent name -> model name. */
  agents: z.record(z.string(), ModelName).optional(),
  /** Model name -> what it is. */
  available: z
    .record(ModelName, z.discriminatedUnion('kind', [OpenAISpecSchema, RulesSpecSchema]))
    .optional(),
});
export type ModelsFile = z.infer<typeof ModelsFileSchema>;

export type ModelSpec =
  | { readonly kind: 'rules' }
  | {
      readonly kind: 'openai';
      readonly baseURL: string;
      readonly model: string;
      readonly apiKey?: string;
      readonly timeoutMs?: number;
      readonly maxRetries?: number;
      readonly backoffMs?: number;
      readonly temperature?: number;
      readonly stream?: boolean;
    };

/** Every model by name (API keys resolved), the default and the agents' own. Plain JSON. */
export interface ModelsSpec {
  readonly default: string;
  readonly agents: Readonly<Record<string, string>>;
  readonly available: Readonly<Record<string, ModelSpec>>;
}

export interface ModelsInput {
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** The configuration file's `models` section. */
  readonly file?: ModelsFile;
  /** `--model`: wins over AGENTSTATE_MODEL and the file's default. */
  readonly model?: string;
  /** `--openai-model`: wins over AGENTSTATE_OPENAI_MODEL. */
  readonly openaiModel?: string;
}

/** The default when nothing names one: only the rules model. */
export const RULES_ONLY: ModelsSpec = {
  default: RULES_MODEL,
  agents: {},
  available: { [RULES_MODEL]: { kind: 'rules' } },
};

function openAIFromEnv(env: ModelsInput['env'], modelName: string | undefined): ModelSpec {
  if (modelName === undefined || modelName.trim() === '') {
    throw invalidRequest(
      'the openai model needs the name of the model at its endpoint: --openai-model NAME or AGENTSTATE_OPENAI_MODEL (with OPENAI_BASE_URL for an endpoint other than api.openai.com, and OPENAI_API_KEY when it asks for a key)',
    );
  }
  const baseURL = env?.OPENAI_BASE_URL?.trim() || DEFAULT_OPENAI_BASE_URL;
  if (!HttpUrl.safeParse(baseURL).success) {
    throw invalidRequest(
      `OPENAI_BASE_URL must be an http:// or https:// URL, got ${JSON.stringify(endpointOf(baseURL))}`,
    );
  }
  const apiKey = env?.OPENAI_API_KEY?.trim();
  return { kind: 'openai', baseURL, model: modelName.trim(), ...(apiKey ? { apiKey } : {}) };
}

/** The models the options, the file and the environment configure; a clear error for anything wrong. */
export function resolveModels(input: ModelsInput = {}): ModelsSpec {
  const env = input.env ?? {};
  const file = input.file ?? {};
  const available: Record<string, ModelSpec> = { [RULES_MODEL]: { kind: 'rules' } };
  for (const [name, given] of Object.entries(file.available ?? {})) {
    if (name === RULES_MODEL && given.kind !== 'rules') {
      throw invalidRequest(`models.available.${name}: "${RULES_MODEL}" is the built-in offline model's name`);
    }
    if (given.kind === 'rules') {
      available[name] = { kind: 'rules' };
      continue;
    }
    const { apiKeyEnv, apiKey, kind, ...rest } = given;
    if (apiKey !== undefined && apiKeyEnv !== undefined) {
      throw invalidRequest(`models.available.${name}: give apiKey or apiKeyEnv, not both`);
    }
    const fromEnv = apiKeyEnv === undefined ? undefined : env[apiKeyEnv]?.trim();
    if (apiKeyEnv !== undefined && !fromEnv) {
      throw invalidRequest(`models.available.${name}: the environment variable ${apiKeyEnv} is not set`);
    }
    const key = apiKey ?? fromEnv;
    available[name] = { kind, ...rest, ...(key ? { apiKey: key } : {}) };
  }
  const chosen = (input.model ?? env.AGENTSTATE_MODEL)?.trim() || undefined;
  const openaiModel = (input.openaiModel ?? env.AGENTSTATE_OPENAI_MODEL)?.trim() || undefined;
  const defaultName = chosen ?? file.default ?? RULES_MODEL;
  const wantsEnvModel =
    available[ENV_OPENAI_MODEL] === undefined &&
    (openaiModel !== undefined ||
      defaultName === ENV_OPENAI_MODEL ||
      Object.values(file.agents ?? {}).includes(ENV_OPENAI_MODEL));
  if (wantsEnvModel) available[ENV_OPENAI_MODEL] = openAIFromEnv(env, openaiModel);
  const names = Object.keys(available);
  if (available[defaultName] === undefined) {
    const where = chosen !== undefined ? '--model (or AGENTSTATE_MODEL)' : 'models.default';
    throw invalidRequest(
      `${where}: no model named ${JSON.stringify(defaultName)}; configured: ${names.join(', ')}`,
    );
  }
  for (const [agent, name] of Object.entries(file.agents ?? {})) {
    if (available[name] === undefined) {
      throw invalidRequest(
        `models.agents.${agent}: no model named ${JSON.stringify(name)}; configured: ${names.join(', ')}`,
      );
    }
  }
  return { default: defaultName, agents: { ...(file.agents ?? {}) }, available };
}

/** What may be shown of a model: its name, kind, endpoint and model; never its key. */
export function describeModel(spec: ModelsSpec, name: string): string {
  const model = spec.available[name];
  if (model === undefined) return `${name} (not configured)`;
  if (model.kind === 'rules') return `${name} (offline rules)`;
  return `${name} (${model.model} at ${endpointOf(model.baseURL)}${model.stream ? ', streamed' : ''})`;
}

/** The models of a spec in a registry, each passed through `wrap` (metrics) when given. */
export function buildModelRegistry(
  spec: ModelsSpec,
  wrap: (model: Model) => Model = (m) => m,
): ModelRegistry {
  const models: Model[] = [];
  for (const [name, model] of Object.entries(spec.available)) {
    if (model.kind === 'rules') {
      models.push(wrap({ ...createRulesModel(), name }));
      continue;
    }
    const { kind: _kind, ...options } = model;
    models.push(wrap(createOpenAIModel({ ...options, name })));
  }
  return createModelRegistry(models);
}

/** The model a session's turns run with: the one it named, else its agent's, else the default. */
export function modelForSession(
  spec: ModelsSpec,
  session: { readonly agent?: string | null; readonly context?: JsonObject },
): string {
  const named = session.context?.model;
  if (typeof named === 'string') return named;
  const agent = session.agent;
  return (typeof agent === 'string' ? spec.agents[agent] : undefined) ?? spec.default;
}

/** A name a session may choose, or a 400 naming the choices. */
export function checkModelName(spec: ModelsSpec, name: unknown, field: string): void {
  if (typeof name === 'string' && spec.available[name] !== undefined) return;
  throw invalidRequest(
    `${field}: no model named ${JSON.stringify(name)}; choose one of ${Object.keys(spec.available).join(', ')}`,
    { field, choices: Object.keys(spec.available) },
  );
}
