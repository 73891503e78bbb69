/**
 * Input bounds shared by every adapter, so the same call has the same outcome on memory, SQLite,
 * PostgreSQL, Redis and tiered: a value out of bounds is `invalid_request` naming the field, never a
 * driver error (a 503) and never a record that can no longer be read.
 *
 * Why these numbers:
 * - Durations: TTLs in seconds at most 10 years (315 360 000 s) and lease TTLs at most 24 hours
 *   (86 400 000 ms), the bounds the Redis store always had. An expiry past year 9999 cannot be written as
 *   an ISO-8601 instant that sorts as text, and these keep every expiry far below it.
 * - Integers that reach an INTEGER column of the SQL schema (versions, seq, step, ttl_seconds): at most
 *   2 147 483 647, PostgreSQL's `integer`. The same bound applies to every other count the store takes.
 * - Strings: names and ids 256 characters, keys (idempotency keys, request keys and hashes) 512, memory
 *   keys and prefixes 1024, a task's status line 2000, free text (message content, notes, error
 *   messages) 1 000 000 characters; at most 1000 messages in one append. Those are the Redis store's
 *   limits; the HTTP API's configured limits are lower still.
 */

/** PostgreSQL's `integer`: the largest version, seq, step or count any adapter accepts. */
export const MAX_INT = 2_147_483_647;
/** Longest time to live in seconds (sessions, memory items, request keys): 10 years. */
export const MAX_TTL_SECONDS = 10 * 365 * 24 * 3600;
/** Longest lease in milliseconds: 24 hours. */
export const MAX_LEASE_TTL_MS = 24 * 3600 * 1000;
/** Names, ids, types, tools, namespaces, run ids, labels, scope ids. */
export const MAX_NAME_LENGTH = 256;
/** Idempotency keys of actions, request (Idempotency-Key) keys and request hashes. */
export const MAX_KEY_LENGTH = 512;
/** Keys of memory items, and the prefix of a memory listing. */
export const MAX_MEMORY_KEY_LENGTH = 1024;
/**
 * A list cursor as the stores hand it out: it holds a memory key at most (1024 characters, up to 6 bytes
 * each once escaped as JSON), sealed, in base64url.
 */
export const MAX_CURSOR_LENGTH = 9_000;
/** A task's status line. */
export const MAX_STATUS_LINE_LENGTH = 2000;
/** Message content, notes, action error messages. */
export const MAX_TEXT_LENGTH = 1_000_000;
/** Messages in one appendMessages call (or one turn's messages). */
export const MAX_MESSAGES_PER_APPEND = 1000;

/** The last segment of a field path: `batch.messages.items[3].content` -> `content`. */
function lastSegment(field: string): string {
  const dot = field.lastIndexOf('.');
  return dot < 0 ? field : field.slice(dot + 1);
}

/** The longest string the field named `field` (a path as the validators name it) may hold. */
export function maxTextLength(field: string): number {
  const last = lastSegment(field);
  if (last === 'content' || last === 'note' || field.endsWith('error.message')) return MAX_TEXT_LENGTH;
  if (last === 'status_line') return MAX_STATUS_LINE_LENGTH;
  if (last === 'idempotency_key' || last === 'request key' || last === 'request_hash') return MAX_KEY_LENGTH;
  if (field === 'key' || field === 'memory.key' || field === 'prefix') return MAX_MEMORY_KEY_LENGTH;
  return MAX_NAME_LENGTH;
}

/** The largest integer the field named `field` may hold: a TTL's bound, or PostgreSQL's `integer`. */
export function maxInteger(field: string): number {
  if (/ttl_?seconds$/i.test(field)) return MAX_TTL_SECONDS;
  if (/(^|[._])ttl_ms$/.test(field)) return MAX_LEASE_TTL_MS;
  return MAX_INT;
}

/**
 * The index of a message in a path such as `messages[1000]` or `batch.messages.items[1000]`, or null for
 * any other path: lets a validator that sees each message refuse the 1001st.
 */
export function messageIndex(field: string): number | null {
  const match = /(?:^messages|\.items)\[(\d+)\]$/.exec(field);
  return match === null ? null : Number(match[1]);
}
