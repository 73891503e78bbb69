/**
 * The data model of SPEC 1-2: zod schemas and the types inferred from them.
 * Records use snake_case fields, as the HTTP API does, so one definition serves the library and the wire.
 */
import { z } from 'zod';
import type { JsonObject, JsonValue } from './json.js';

export const SESSION_STATUSES = ['active', 'waiting_for_user', 'paused', 'ended', 'expired'] as const;
export const TASK_STATES = [
  'INIT',
  'COLLECTING',
  'CONFIRMING',
  'EXECUTING',
  'DONE',
  'FAILED',
  'CANCELLED',
] as const;
export const ACTION_STATUSES = ['PENDING', 'SUCCESS', 'FAILED', 'UNKNOWN'] as const;
export const MESSAGE_ROLES = ['system', 'user', 'assistant', 'tool'] as const;

export const SessionStatusSchema = z.enum(SESSION_STATUSES);
export const TaskStateSchema = z.enum(TASK_STATES);
export const ActionStatusSchema = z.enum(ACTION_STATUSES);
export const MessageRoleSchema = z.enum(MESSAGE_ROLES);

export type SessionStatus = z.infer<typeof SessionStatusSchema>;
export type TaskState = z.infer<typeof TaskStateSchema>;
export type ActionStatus = z.infer<typeof ActionStatusSchema>;
export type MessageRole = z.infer<typeof MessageRoleSchema>;

/** Allowed task transitions (SPEC 1). CANCELLED is reachable from every state that is not final. */
export const TASK_TRANSITIONS: Readonly<Record<TaskState, readonly TaskState[]>> = {
  INIT: ['COLLECTING', 'CANCELLED'],
  COLLECTING: ['CONFIRMING', 'FAILED', 'CANCELLED'],
  CONFIRMING: ['EXECUTING', 'COLLECTING', 'CANCELLED'],
  EXECUTING: ['DONE', 'FAILED', 'CANCELLED'],
  FAILED: ['COLLECTING', 'CANCELLED'],
  DONE: [],
  CANCELLED: [],
};

/** States in which a task is finished: no transition leaves DONE or CANCELLED. */
export const FINAL_TASK_STATES: readonly TaskState[] = ['DONE', 'CANCELLED'];
/** States in which a task is open (it belongs in a session's list of open tasks). */
export const OPEN_TASK_STATES: readonly TaskState[] = [
  'INIT',
  'COLLECTING',
  'CONFIRMING',
  'EXECUTING',
  'FAILED',
];

export function canTransition(from: TaskState, to: TaskState): boolean {
  return TASK_TRANSITIONS[from].includes(to);
}

/**
 * Allowed session status changes. `expired` is set by time, not by a caller; an `ended` session stays ended
 * (it is removed when its TTL runs out).
 */
export const SESSION_TRANSITIONS: Readonly<Record<SessionStatus, readonly SessionStatus[]>> = {
  active: ['waiting_for_user', 'paused', 'ended'],
  waiting_for_user: ['active', 'paused', 'ended'],
  paused: ['active', 'waiting_for_user', 'ended'],
  ended: [],
  expired: [],
};

/** Allowed action status changes: completion from PENDING, resolution of PENDING or UNKNOWN by a person. */
export const ACTION_TRANSITIONS: Readonly<Record<ActionStatus, readonly ActionStatus[]>> = {
  PENDING: ['SUCCESS', 'FAILED', 'UNKNOWN'],
  UNKNOWN: ['SUCCESS', 'FAILED'],
  SUCCESS: [],
  FAILED: [],
};

// Named, so that the OpenAPI document holds it once as a component its $refs name (it is recursive).
const jsonValue: z.ZodType<JsonValue> = z
  .lazy(() =>
    z.union([
      z.string(),
      z.number(),
      z.boolean(),
      z.null(),
      z.array(jsonValue),
      z.record(z.string(), jsonValue),
    ]),
  )
  .meta({ id: 'JsonValue', description: 'Any JSON value' });
const jsonObject: z.ZodType<JsonObject> = z.record(z.string(), jsonValue);
export const JsonValueSchema = jsonValue;
export const JsonObjectSchema = jsonObject;

const isoTimestamp = z.iso.datetime({ offset: false });
const nullableTimestamp = isoTimestamp.nullable();

export const ForkOriginSchema = z.object({
  session_id: z.string(),
  seq: z.number().int(),
  checkpoint_id: z.string().nullable(),
});
export type ForkOrigin = z.infer<typeof ForkOriginSchema>;

/**
 * A session's history as ranges of stored lines: `segments` (each the messages from_seq..to_seq as stored
 * under session `line`), then the session's own messages from `own_from` on. Seq numbers a reader sees run
 * through the segments, then the own messages. `held_until`: how long the lines of the segments are kept.
 */
export const SessionHistorySchema = z.object({
  segments: z.array(z.object({ line: z.string(), from_seq: z.number().int(), to_seq: z.number().int() })),
  own_from: z.number().int(),
  held_until: isoTimestamp,
});
export type SessionHistory = z.infer<typeof SessionHistorySchema>;

export const SessionSchema = z.object({
  id: z.string(),
  tenant_id: z.string(),
  user_id: z.string(),
  agent: z.string().nullable(),
  status: SessionStatusSchema,
  context: jsonObject,
  version: z.number().int(),
  ttl_seconds: z.number().int(),
  created_at: isoTimestamp,
  updated_at: isoTimestamp,
  last_activity_at: isoTimestamp,
  expires_at: isoTimestamp,
  ended_at: nullableTimestamp,
  /** Set on a fork: the session and message it starts from (and the checkpoint it was asked at). */
  forked_from: ForkOriginSchema.optional(),
  /** Set on a fork or a rewound session: where its history is read from. */
  history: SessionHistorySchema.optional(),
  /** Set while forks read this session's messages: they are kept until then, even once it expires. */
  retained_until: isoTimestamp.optional(),
});
export type Session = z.infer<typeof SessionSchema>;

export const ToolCallSchema = z.strictObject({ id: z.string(), name: z.string(), arguments: jsonValue });
export type ToolCall = z.infer<typeof ToolCallSchema>;

export const MessageSchema = z.object({
  id: z.string(),
  tenant_id: z.string(),
  user_id: z.string(),
  session_id: z.string(),
  seq: z.number().int(),
  role: MessageRoleSchema,
  content: z.string(),
  name: z.string().nullable(),
  tool_calls: z.array(ToolCallSchema).nullable(),
  tool_call_id: z.string().nullable(),
  metadata: jsonObject,
  created_at: isoTimestamp,
});
export type Message = z.infer<typeof MessageSchema>;

export const TaskSchema = z.object({
  id: z.string(),
  tenant_id: z.string(),
  user_id: z.string(),
  session_id: z.string().nullable(),
  type: z.string(),
  state: TaskStateSchema,
  slots: jsonObject,
  status_line: z.string(),
  data: jsonObject,
  version: z.number().int(),
  created_at: isoTimestamp,
  updated_at: isoTimestamp,
  closed_at: nullableTimestamp,
});
export type Task = z.infer<typeof TaskSchema>;

export const TaskEventSchema = z.object({
  id: z.string(),
  tenant_id: z.string(),
  user_id: z.string(),
  task_id: z.string(),
  from_state: TaskStateSchema.nullable(),
  to_state: TaskStateSchema,
  cause: z.string(),
  task_version: z.number().int(),
  at: isoTimestamp,
});
export type TaskEvent = z.infer<typeof TaskEventSchema>;

/**
 * What a run's event log says happened (issue "Live runs"): ordered within the run, written in the same
 * commits as the state they describe. The three final types end a run's stream.
 */
export const RUN_EVENT_TYPES = [
  'run.started',
  'message.delta',
  'message.created',
  'task.updated',
  'action.updated',
  'checkpoint.created',
  'run.waiting',
  'run.completed',
  'run.failed',
  'run.cancelled',
] as const;
export const FINAL_RUN_EVENT_TYPES = ['run.completed', 'run.failed', 'run.cancelled'] as const;
export const RunEventTypeSchema = z.enum(RUN_EVENT_TYPES);
export type RunEventType = z.infer<typeof RunEventTypeSchema>;

export function isFinalRunEvent(type: string): boolean {
  return (FINAL_RUN_EVENT_TYPES as readonly string[]).includes(type);
}

export const RunEventSchema = z.object({
  /** Opaque to clients; orders the run's events (pass it back as `after` / `Last-Event-ID`). */
  id: z.string(),
  run_id: z.string(),
  session_id: z.string(),
  type: RunEventTypeSchema,
  data: z.record(z.string(), z.unknown()),
  created_at: isoTimestamp,
});
export interface RunEvent {
  readonly id: string;
  readonly run_id: string;
  readonly session_id: string;
  readonly type: RunEventType;
  readonly data: JsonObject;
  readonly created_at: string;
}

export const ActionErrorSchema = z.object({
  code: z.string(),
  message: z.string(),
  details: jsonValue.optional(),
});
export type ActionError = z.infer<typeof ActionErrorSchema>;

export const ActionSchema = z.object({
  id: z.string(),
  tenant_id: z.string(),
  user_id: z.string(),
  task_id: z.string(),
  session_id: z.string().nullable(),
  type: z.string(),
  tool: z.string().nullable(),
  params: jsonValue,
  idempotency_key: z.string(),
  status: ActionStatusSchema,
  result: jsonValue.nullable(),
  error: ActionErrorSchema.nullable(),
  attempts: z.number().int(),
  /** Why the action is UNKNOWN, or who resolved it and how. */
  note: z.string().nullable(),
  created_at: isoTimestamp,
  updated_at: isoTimestamp,
  completed_at: nullableTimestamp,
});
export type Action = z.infer<typeof ActionSchema>;

export const CheckpointSchema = z.object({
  id: z.string(),
  tenant_id: z.string(),
  user_id: z.string(),
  run_id: z.string(),
  session_id: z.string().nullable(),
  task_id: z.string().nullable(),
  step: z.number().int(),
  parent_id: z.string().nullable(),
  label: z.string(),
  channels: jsonObject,
  metadata: jsonObject,
  created_at: isoTimestamp,
});
export type Checkpoint = z.infer<typeof CheckpointSchema>;

export const MemoryItemSchema = z.object({
  tenant_id: z.string(),
  user_id: z.string(),
  namespace: z.string(),
  key: z.string(),
  value: jsonValue,
  created_at: isoTimestamp,
  updated_at: isoTimestamp,
  expires_at: nullableTimestamp,
});
export type MemoryItem = z.infer<typeof MemoryItemSchema>;
