/** Row to record mapping: the one place that knows how columns hold the model's fields. */
import type { JsonObject, JsonValue } from '../../core/json.js';
import type {
  Action,
  ActionError,
  ActionStatus,
  MemoryItem,
  Message,
  MessageRole,
  Session,
  SessionStatus,
  Task,
  TaskState,
  ToolCall,
} from '../../core/model.js';
import type { StoredTaskEvent, TaskSnapshot } from '../core/driver.js';
import type { SqlRow } from './executor.js';

const str = (value: unknown): string => String(value);
const strOrNull = (value: unknown): string | null =>
  value === null || value === undefined ? null : String(value);
const int = (value: unknown): number => Number(value);
const json = <T extends JsonValue>(value: unknown): T => JSON.parse(String(value)) as T;
const jsonOrNull = <T extends JsonValue>(value: unknown): T | null =>
  value === null || value === undefined ? null : json<T>(value);

/** JSON text for a column; `null` stays SQL NULL when the column is nullable. */
export function toJson(value: JsonValue | undefined): string {
  return JSON.stringify(value === undefined ? null : value);
}

export const SESSION_COLUMNS =
  'id, tenant_id, user_id, agent, status, context, version, ttl_seconds, created_at, updated_at, last_activity_at, expires_at, ended_at, lineage';

/** A session's fork fields, kept as one JSON column (null for a session that was never forked). */
interface Lineage {
  forked_from?: Session['forked_from'];
  history?: Session['history'];
  retained_until?: Session['retained_until'];
}

export function lineageOf(s: Session): string | null {
  if (s.forked_from === undefined && s.history === undefined && s.retained_until === undefined) return null;
  const lineage: Lineage = {};
  if (s.forked_from !== undefined) lineage.forked_from = s.forked_from;
  if (s.history !== undefined) lineage.history = s.history;
  if (s.retained_until !== undefined) lineage.retained_until = s.retained_until;
  return JSON.stringify(lineage);
}

export function toSession(row: SqlRow): Session {
  return {
    id: str(row.id),
    tenant_id: str(row.tenant_id),
    user_id: str(row.user_id),
    agent: strOrNull(row.agent),
    status: str(row.status) as SessionStatus,
    context: json<JsonObject>(row.context),
    version: int(row.version),
    ttl_seconds: int(row.ttl_seconds),
    created_at: str(row.created_at),
    updated_at: str(row.updated_at),
    last_activity_at: str(row.last_activity_at),
    expires_at: str(row.expires_at),
    ended_at: strOrNull(row.ended_at),
    ...(row.lineage === null || row.lineage === undefined ? {} : (JSON.parse(str(row.lineage)) as Lineage)),
  };
}

export const MESSAGE_COLUMNS =
  'id, tenant_id, user_id, session_id, seq, role, content, name, tool_calls, tool_call_id, metadata, created_at';

export function toMessage(row: SqlRow): Message {
  return {
    id: str(row.id),
    tenant_id: str(row.tenant_id),
    user_id: str(row.user_id),
    session_id: str(row.session_id),
    seq: int(row.seq),
    role: str(row.role) as MessageRole,
    content: str(row.content),
    name: strOrNull(row.name),
    tool_calls: jsonOrNull(row.tool_calls) as ToolCall[] | null,
    tool_call_id: strOrNull(row.tool_call_id),
    metadata: json<JsonObject>(row.metadata),
    created_at: str(row.created_at),
  };
}

export const TASK_COLUMNS =
  'id, tenant_id, user_id, session_id, type, state, slots, status_line, data, version, created_at, updated_at, closed_at';

export function toTask(row: SqlRow): Task {
  return {
    id: str(row.id),
    tenant_id: str(row.tenant_id),
    user_id: str(row.user_id),
    session_id: strOrNull(row.session_id),
    type: str(row.type),
    state: str(row.state) as TaskState,
    slots: json<JsonObject>(row.slots),
    status_line: str(row.status_line),
    data: json<JsonObject>(row.data),
    version: int(row.version),
    created_at: str(row.created_at),
    updated_at: str(row.updated_at),
    closed_at: strOrNull(row.closed_at),
  };
}

export const EVENT_COLUMNS =
  'id, tenant_id, user_id, task_id, from_state, to_state, cause, task_version, at, snapshot';

export function toTaskEvent(row: SqlRow): StoredTaskEvent {
  return {
    ...(row.snapshot === null || row.snapshot === undefined
      ? {}
      : { snapshot: JSON.parse(str(row.snapshot)) as TaskSnapshot }),
    id: str(row.id),
    tenant_id: str(row.tenant_id),
    user_id: str(row.user_id),
    task_id: str(row.task_id),
    from_state: strOrNull(row.from_state) as TaskState | null,
    to_state: str(row.to_state) as TaskState,
    cause: str(row.cause),
    task_version: int(row.task_version),
    at: str(row.at),
  };
}

export const ACTION_COLUMNS =
  'id, tenant_id, user_id, task_id, session_id, type, tool, params, idempotency_key, status, result, error, attempts, note, created_at, updated_at, completed_at';

export function toAction(row: SqlRow): Action {
  return {
    id: str(row.id),
    tenant_id: str(row.tenant_id),
    user_id: str(row.user_id),
    task_id: str(row.task_id),
    session_id: strOrNull(row.session_id),
    type: str(row.type),
    tool: strOrNull(row.tool),
    params: json(row.params),
    idempotency_key: str(row.idempotency_key),
    status: str(row.status) as ActionStatus,
    result: jsonOrNull(row.result),
    error: jsonOrNull(row.error) as ActionError | null,
    attempts: int(row.attempts),
    note: strOrNull(row.note),
    created_at: str(row.created_at),
    updated_at: str(row.updated_at),
    completed_at: strOrNull(row.completed_at),
  };
}

export const MEMORY_COLUMNS = 'tenant_id, user_id, namespace, key, value, created_at, updated_at, expires_at';

export function toMemory(row: SqlRow): MemoryItem {
  return {
    tenant_id: str(row.tenant_id),
    user_id: str(row.user_id),
    namespace: str(row.namespace),
    key: str(row.key),
    value: json(row.value),
    created_at: str(row.created_at),
    updated_at: str(row.updated_at),
    expires_at: strOrNull(row.expires_at),
  };
}
