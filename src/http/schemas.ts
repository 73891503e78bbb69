/**
 * Request schemas of the HTTP API, built from the model's zod definitions and the configured limits.
 * Bodies and queries are strict: an unknown field is a 400 that names it.
 */
import { z } from 'zod';
import { isId } from '../core/ids.js';
import {
  ActionErrorSchema,
  ActionStatusSchema,
  JsonObjectSchema,
  JsonValueSchema,
  MessageRoleSchema,
  SESSION_STATUSES,
  TaskStateSchema,
  ToolCallSchema,
} from '../core/model.js';
import { type HttpLimits, PRINCIPAL_ID } from '../server/config.js';
import { MAX_CURSOR_LENGTH } from '../store/limits.js';
import { MAX_PAGE_LIMIT } from '../store/types.js';

/** A non-negative integer sent as a query-string digit string. */
export function intQuery(min: number, max: number) {
  return z
    .string()
    .regex(/^\d{1,15}$/, 'must be a whole number')
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));
}

export function idParam(kind: 'session' | 'task' | 'action' | 'checkpoint') {
  return z.string().refine((value) => isId(value, kind), `is not a valid ${kind} id`);
}

export const UserIdSchema = z
  .string()
  .regex(PRINCIPAL_ID, 'must be 1-128 letters, digits or ._@:+- and start with a letter or digit');
export const CursorSchema = z.string().min(1).max(MAX_CURSOR_LENGTH);
const MAX_TTL_SECONDS = 365 * 24 * 3600;

export const SessionParams = z.strictObject({ id: idParam('session') });
export const RunParams = z.strictObject({
  id: idParam('session'),
  run_id: z.string().regex(/^run_[a-z0-9]{1,64}$/, 'is not a run id'),
});
export const TaskParams = z.strictObject({ id: idParam('task') });
export const ActionParams = z.strictObject({ id: idParam('action') });
export const NamespaceSchema = z
  .string()
  .regex(/^[A-Za-z0-9._:-]{1,128}$/, 'must be 1-128 letters, digits or ._:-');
export const MemoryKeySchema = z
  .string()
  .min(1)
  .max(256)
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the point is to refuse control characters
  .regex(/^[^\u0000-\u001f\u007f]+$/, 'must not contain control characters');
export const MemoryItemParams = z.strictObject({
  user_id: UserIdSchema,
  namespace: NamespaceSchema,
  key: MemoryKeySchema,
});
export const MemoryNamespaceParams = z.strictObject({ user_id: UserIdSchema, namespace: NamespaceSchema });

/** `If-Match: 3` or `If-Match: "3"`: the version the client read. */
export const IfMatchHeaders = z.looseObject({
  'if-match': z
    .string({ error: 'If-Match is required: send the version you read, for example If-Match: "3"' })
    .regex(/^(W\/)?"?\d{1,15}"?$/, 'must be the version number you read, for example "3"'),
});

export function versionOfIfMatch(value: string): number {
  return Number(value.replace(/\D/g, ''));
}

export const PageQueryShape = {
  limit: intQuery(1, MAX_PAGE_LIMIT).optional(),
  cursor: CursorSchema.optional(),
};

export function buildSchemas(limits: HttpLimits) {
  const short = z.string().min(1).max(limits.maxShortStringChars);
  const message = z.strictObject({
    role: MessageRoleSchema,
    content: z.string().max(limits.maxMessageChars),
    name: short.nullable().optional(),
    tool_calls: z.array(ToolCallSchema).max(128).nullable().optional(),
    tool_call_id: short.nullable().optional(),
    metadata: JsonObjectSchema.optional(),
  });
  return {
    createSession: z.strictObject({
      user_id: UserIdSchema.optional(),
      agent: short.nullable().optional(),
      /** The model of the session's turns: one the server configured (else its agent's or the default). */
      model: short.optional(),
      ttl_seconds: z.number().int().min(1).max(MAX_TTL_SECONDS).optional(),
      context: JsonObjectSchema.optional(),
    }),
    listSessions: z.strictObject({
      user_id: UserIdSchema.optional(),
      status: z.enum(SESSION_STATUSES).optional(),
      ...PageQueryShape,
    }),
    patchSession: z.strictObject({
      status: z.enum(['active', 'waiting_for_user', 'paused', 'ended']).optional(),
      context: JsonObjectSchema.optional(),
      agent: short.nullable().optional(),
      ttl_seconds: z.number().int().min(1).max(MAX_TTL_SECONDS).optional(),
    }),
    appendMessages: z.strictObject({ messages: z.array(message).min(1).max(limits.maxMessagesPerRequest) }),
    listMessages: z.strictObject({
      after_seq: intQuery(0, Number.MAX_SAFE_INTEGER).optional(),
      limit: intQuery(1, 1000).optional(),
      cursor: z
        .string()
        .regex(/^\d{1,15}$/, 'is not a cursor this API returned')
        .optional(),
    }),
    turn: z.strictObject({
      input: z.string().min(1).max(limits.maxTurnInputChars),
      /** What to do when the session is busy with another run; default: the session's context.on_busy. */
      on_busy: z.enum(['reject', 'enqueue', 'interrupt']).optional(),
    }),
    context: z.strictObject({ max_tokens: intQuery(1, 1_000_000).optional() }),
    checkpoints: z.strictObject({
      limit: intQuery(1, MAX_PAGE_LIMIT).optional(),
      before: idParam('checkpoint').optional(),
    }),
    resume: z.strictObject({}),
    runEvents: z.strictObject({
      after: z
        .string()
        .regex(/^[1-9]\d{0,9}$/, 'is not an event id this API returned')
        .optional(),
      limit: intQuery(1, 1000).optional(),
    }),
    listTasks: z.strictObject({
      session_id: idParam('session').optional(),
      user_id: UserIdSchema.optional(),
      state: z
        .string()
        .transform((text) => text.split(','))
        .pipe(z.array(TaskStateSchema).min(1))
        .optional(),
      type: short.optional(),
      ...PageQueryShape,
    }),
    patchTask: z
      .strictObject({
        state: TaskStateSchema.optional(),
        slots: JsonObjectSchema.optional(),
        status_line: z.string().max(limits.maxMessageChars).optional(),
        data: JsonObjectSchema.optional(),
        cause: short.optional(),
      })
      // The cause is the reason of a state change, kept in its event: alone it would be dropped.
      .refine((patch) => patch.cause === undefined || patch.state !== undefined, {
        path: ['cause'],
        message: "only with a state change (it is kept in the change's event)",
      }),
    createAction: z.strictObject({
      task_id: idParam('task'),
      type: short,
      tool: short.nullable().optional(),
      params: JsonValueSchema,
      idempotency_key: short,
    }),
    listActions: z.strictObject({ status: ActionStatusSchema.optional(), ...PageQueryShape }),
    patchAction: z.strictObject({
      status: z.enum(['SUCCESS', 'FAILED', 'UNKNOWN']),
      result: JsonValueSchema.optional(),
      error: ActionErrorSchema.strict().optional(),
      note: z.string().min(1).max(limits.maxMessageChars).optional(),
    }),
    putMemory: z.strictObject({
      value: JsonValueSchema,
      ttl_seconds: z.number().int().min(1).max(MAX_TTL_SECONDS).nullable().optional(),
    }),
    listMemory: z.strictObject({ prefix: z.string().max(256).optional(), ...PageQueryShape }),
    mintToken: z.strictObject({
      user_id: UserIdSchema,
      ttl_seconds: z.number().int().min(1).max(limits.maxTokenTtlSeconds).optional(),
    }),
  };
}

export type Schemas = ReturnType<typeof buildSchemas>;

export const ErrorResponseSchema = z.object({
  error: z.object({
    code: z.string(),
    message: z.string(),
    details: z.record(z.string(), z.unknown()).optional(),
  }),
});

export function pageOf<T extends z.ZodType>(item: T) {
  return z.object({ items: z.array(item), next_cursor: z.string().nullable() });
}
