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
