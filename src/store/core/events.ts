/**
 * Run events: the checks of what a caller appends, the events a turn's commit writes for its records, and
 * the mapping between stored rows (numbered by `seq` within the run) and the events callers see, whose ids
 * are opaque strings.
 */
import { isoAt } from '../../core/clock.js';
import type { JsonObject } from '../../core/json.js';
import {
  type Action,
  type Checkpoint,
  type Message,
  RUN_EVENT_TYPES,
  type RunEvent,
  type RunEventType,
  type Task,
} from '../../core/model.js';
import type { NewRunEvent, ReadScope, RunEventQuery, Scope, TurnEvents, TurnResult } from '../types.js';
import type { CoreEnv, Op, WriteOp } from './context.js';
import type { RunEventRow } from './driver.js';
import { liveSession, requireSession } from './sessions.js';

export const MAX_RUN_EVENTS = 1000;
const EVENT_FIELDS = ['type', 'data'] as const;
const APPEND_FIELDS = ['session_id', 'run_id', 'events'] as const;
const TURN_EVENT_FIELDS = ['session_id', 'run_id', 'items', 'final'] as const;
const QUERY_FIELDS = ['after', 'limit'] as const;
const EVENT_ID = /^[1-9][0-9]{0,9}$/;

export interface CheckedEvent {
  readonly type: RunEventType;
  readonly data: JsonObject;
}

export function checkEvent(env: CoreEnv, event: NewRunEvent, path: string): CheckedEvent {
  const { v } = env;
  v.record(event, path, EVENT_FIELDS);
  return {
    type: v.oneOf(event.type, RUN_EVENT_TYPES, `${path}.type`),
    data: event.data === undefined ? {} : v.jsonObject(event.data, `${path}.data`),
  };
}

function checkEvents(env: CoreEnv, events: unknown, path: string, min: number): CheckedEvent[] {
  const { v } = env;
  if (!Array.isArray(events)) return v.fail(`${path} must be an array of events`);
  if (events.length < min || events.length > MAX_RUN_EVENTS)
    v.fail(`${path} must hold ${min} to ${MAX_RUN_EVENTS} events, got ${events.length}`);
  return (events as NewRunEvent[]).map((event, i) => checkEvent(env, event, `${path}[${i}]`));
}

export interface CheckedAppend {
  readonly session_id: string;
  readonly run_id: string;
  readonly events: CheckedEvent[];
}

export function checkAppend(env: CoreEnv, append: unknown, path: string): CheckedAppend {
  const { v } = env;
  v.record(append, path, APPEND_FIELDS);
  const { session_id, run_id, events } = append as { session_id: unknown; run_id: unknown; events: unknown };
  return {
    session_id: v.id(session_id, 'session', `${path}.session_id`),
    run_id: v.name(run_id, `${path}.run_id`),
    events: checkEvents(env, events, `${path}.events`, 1),
  };
}

export interface CheckedTurnEvents {
  readonly session_id: string;
  readonly run_id: string;
  readonly items: CheckedEvent[];
  readonly final: ((written: TurnResult) => NewRunEvent) | null;
}

export function checkTurnEvents(env: CoreEnv, events: TurnEvents, path: string): CheckedTurnEvents {
  const { v } = env;
  v.record(events, path, TURN_EVENT_FIELDS);
  if (events.final !== undefined && typeof events.final !== 'function')
    v.fail(`${path}.final must be a function of what the batch wrote`);
  return {
    session_id: v.id(events.session_id, 'session', `${path}.session_id`),
    run_id: v.name(events.run_id, `${path}.run_id`),
    items: events.items === undefined ? [] : checkEvents(env, events.items, `${path}.items`, 0),
    final: events.final ?? null,
  };
}

export function checkEventQuery(env: CoreEnv, query: RunEventQuery): { after: number; limit: number } {
  const { v } = env;
  v.record(query, 'query', QUERY_FIELDS);
  const { after } = query;
  let seq = 0;
  if (after !== undefined && after !== null) {
    if (typeof after !== 'string' || !EVENT_ID.test(after) || Number(after) > 2_147_483_647)
      v.fail(`after must be the id of an event of the run, got ${JSON.stringify(after) ?? String(after)}`);
    seq = Number(after);
  }
  return { after: seq, limit: v.limit(query.limit, 'limit', 100, MAX_RUN_EVENTS) };
}

/** What a task's event tells: where it stands, not its private data. */
function taskData(task: Task): JsonObject {
  return {
    task_id: task.id,
    type: task.type,
    state: task.state,
    slots: task.slots,
    status_line: task.status_line,
    version: task.version,
  };
}

function actionData(action: Action): JsonObject {
  return {
    action_id: action.id,
    task_id: action.task_id,
    type: action.type,
    tool: action.tool,
    status: action.status,
    idempotency_key: action.idempotency_key,
    attempts: action.attempts,
    error: action.error,
  };
}

function messageData(message: Message): JsonObject {
  return { message: { ...message, tool_calls: message.tool_calls?.map((call) => ({ ...call })) ?? null } };
}

function checkpointData(checkpoint: Checkpoint): JsonObject {
  return {
    checkpoint_id: checkpoint.id,
    step: checkpoint.step,
    label: checkpoint.label,
    task_id: checkpoint.task_id,
  };
}

/** The events of what a turn's batch wrote, in the batch's order. */
export function eventsOfTurn(written: TurnResult): CheckedEvent[] {
  return [
    ...written.tasks.map((task) => ({ type: 'task.updated' as const, data: taskData(task) })),
    ...written.actions.map((action) => ({ type: 'action.updated' as const, data: actionData(action) })),
    ...written.messages.map((message) => ({ type: 'message.created' as const, data: messageData(message) })),
    ...(written.checkpoint === null
      ? []
      : [{ type: 'checkpoint.created' as const, data: checkpointData(written.checkpoint) }]),
  ];
}

/** Writes checked events after the run's last, for a live session of the scope's user. */
export async function appendEvents(
  op: WriteOp,
  scope: Scope,
  session_id: string,
  run_id: string,
  events: readonly CheckedEvent[],
): Promise<void> {
  await requireSession(op, scope, session_id);
  if (events.length === 0) return;
  const created_at = isoAt(op.now);
  const expires_at = isoAt(op.now + op.env.runEventTtlSeconds * 1000);
  await op.tx.appendRunEvents(
    events.map((event) => ({
      tenant_id: scope.tenant_id,
      user_id: scope.user_id,
      session_id,
      run_id,
      type: event.type,
      data: event.data,
      created_at,
      expires_at,
    })),
  );
}

export function toRunEvent(row: RunEventRow): RunEvent {
  return {
    id: String(row.seq),
    run_id: row.run_id,
    session_id: row.session_id,
    type: row.type,
    data: row.data,
    created_at: row.created_at,
  };
}

export async function listEvents(
  op: Op,
  scope: ReadScope,
  session_id: string,
  run_id: string,
  query: { after: number; limit: number },
): Promise<RunEvent[]> {
  const session = await liveSession(op, scope, session_id);
  if (session === null) return [];
  const rows = await op.tx.listRunEvents(scope, {
    session_id,
    run_id,
    after_seq: query.after,
    limit: query.limit,
  });
  return rows.map(toRunEvent);
}
