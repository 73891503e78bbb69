/**
 * The fields a message and a tool call may have. A store keeps exactly what it is given, so a field it does
 * not know is refused by name rather than silently left out (`type: 'function'` on a tool call, a typo such
 * as `tool_call_ids`).
 */
export const MESSAGE_FIELDS = ['role', 'content', 'name', 'tool_calls', 'tool_call_id', 'metadata'] as const;
export const TOOL_CALL_FIELDS = ['id', 'name', 'arguments'] as const;

/** The first own key of `value` (an object already checked as one) that is not in `known`, or null. */
export function unknownField(value: object, known: readonly string[]): string | null {
  for (const key of Object.keys(value)) if (!known.includes(key)) return key;
  return null;
}

/** The sentence refusing `field` of the object at `path`, naming the fields it may have. */
export function unknownFieldMessage(path: string, field: string, known: readonly string[]): string {
  return `${path}.${field} is not a field of ${path} (it may have ${known.join(', ')})`;
}

/** The fields of each input a store takes (src/store/types.ts), refused by name when one is not known. */
export const SESSION_FIELDS = ['id', 'agent', 'context', 'ttl_seconds', 'status'] as const;
export const SESSION_PATCH_FIELDS = ['status', 'context', 'agent', 'ttl_seconds'] as const;
export const TASK_FIELDS = ['id', 'session_id', 'type', 'state', 'slots', 'status_line', 'data'] as const;
export const TASK_PATCH_FIELDS = ['state', 'slots', 'status_line', 'data', 'session_id', 'cause'] as const;
export const ACTION_FIELDS = [
  'id',
  'task_id',
  'session_id',
  'type',
  'tool',
  'params',
  'idempotency_key',
] as const;
export const COMPLETION_FIELDS = ['status', 'result', 'error'] as const;
export const RESOLUTION_FIELDS = ['status', 'result', 'error', 'note'] as const;
export const ACTION_ERROR_FIELDS = ['code', 'message', 'details'] as const;
export const CHECKPOINT_FIELDS = [
  'id',
  'run_id',
  'session_id',
  'task_id',
  'step',
  'parent_id',
  'label',
  'channels',
  'metadata',
] as const;
export const BATCH_FIELDS = [
  'session',
  'create_tasks',
  'update_tasks',
  'begin_actions',
  'complete_actions',
  'messages',
  'checkpoint',
  'release_lease',
  'put_memory',
  'other_memory',
  'list_open_tasks',
  'events',
] as const;
export const OTHER_MEMORY_FIELDS = ['scope', 'put', 'delete'] as const;
export const MEMORY_KEY_FIELDS = ['namespace', 'key'] as const;
export const LIST_OPEN_TASKS_FIELDS = ['session_id', 'limit'] as const;
export const SESSION_HEAD_FIELDS = ['open_tasks', 'next_run', 'lease'] as const;
export const RELEASE_LEASE_FIELDS = ['name', 'owner', 'expires_at'] as const;
export const HEAD_LEASE_FIELDS = ['name', 'owner', 'ttl_ms'] as const;
export const VERSIONED_PATCH_FIELDS = ['id', 'expected_version', 'patch'] as const;
export const BATCH_MESSAGES_FIELDS = ['session_id', 'items'] as const;
export const MEMORY_FIELDS = ['namespace', 'key', 'value', 'ttl_seconds'] as const;
export const SESSION_QUERY_FIELDS = ['limit', 'cursor', 'status'] as const;
export const TASK_QUERY_FIELDS = ['limit', 'cursor', 'session_id', 'state', 'type'] as const;
export const ACTION_QUERY_FIELDS = ['limit', 'cursor', 'task_id', 'status'] as const;
export const MEMORY_QUERY_FIELDS = ['limit', 'cursor', 'prefix'] as const;

/**
 * Throws (through `fail`) naming the first field of `value` that is not in `known`. A value that is not an
 * object is left to the checks that refuse it for what it is.
 */
export function refuseUnknownFields(
  value: unknown,
  known: readonly string[],
  path: string,
  fail: (message: string) => never,
): void {
  if (typeof value !== 'object' || value === null) return;
  const extra = unknownField(value, known);
  if (extra !== null) fail(unknownFieldMessage(path, extra, known));
}
