/** The columns of each table: the one place that knows how they hold the model's fields. */
import type { JsonValue } from '../../core/json.js';
import type { Action, MemoryItem, Message, Session, Task } from '../../core/model.js';
import type { StoredTaskEvent } from '../core/driver.js';
import { rowCodec } from './row-codec.js';

/** JSON text for a column; `null` stays SQL NULL when the column is nullable. */
export function toJson(value: JsonValue | undefined): string {
  return JSON.stringify(value === undefined ? null : value);
}

/** A session's fork fields, kept as one JSON column (null for a session that was never forked). */
function lineageOf(s: Session): string | null {
  const lineage: Pick<Session, 'forked_from' | 'history' | 'retained_until'> = {};
  if (s.forked_from !== undefined) lineage.forked_from = s.forked_from;
  if (s.history !== undefined) lineage.history = s.history;
  if (s.retained_until !== undefined) lineage.retained_until = s.retained_until;
  return Object.keys(lineage).length === 0 ? null : JSON.stringify(lineage);
}

export const SESSIONS = rowCodec<Session>(
  `id, tenant_id, user_id, agent text?, status, context json, version int, ttl_seconds int, created_at,
  updated_at, last_activity_at, expires_at, ended_at text?`,
  {
    lineage: {
      encode: lineageOf,
      decode: (value, into) => {
        if (value !== null && value !== undefined) Object.assign(into, JSON.parse(String(value)));
      },
    },
  },
);

export const MESSAGES = rowCodec<Message>(
  `id, tenant_id, user_id, session_id, seq int, role, content, name text?, tool_calls json?,
  tool_call_id text?, metadata json, created_at`,
);

export const TASKS = rowCodec<Task>(
  `id, tenant_id, user_id, session_id text?, type, state, slots json, status_line, data json, version int,
  created_at, updated_at, closed_at text?`,
);

export const TASK_EVENTS = rowCodec<StoredTaskEvent>(
  'id, tenant_id, user_id, task_id, from_state text?, to_state, cause, task_version int, at, snapshot json~',
);

export const ACTIONS = rowCodec<Action>(
  `id, tenant_id, user_id, task_id, session_id text?, type, tool text?, params json, idempotency_key, status,
  result json?, error json?, attempts int, note text?, created_at, updated_at, completed_at text?`,
);

export const MEMORY = rowCodec<MemoryItem>(
  'tenant_id, user_id, namespace, key, value json, created_at, updated_at, expires_at text?',
);
