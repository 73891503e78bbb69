/**
 * What the session keeps beside its messages, in `session.context.openai_agents`: the seqs of items that
 * were popped or replaced (the store's messages are append-only, so those are hidden, not erased), and the
 * operation ids of applied history transactions with a hash of each, so a retried operation applies once.
 */
import { createHash } from 'node:crypto';
import type { JsonObject, JsonValue } from '../../core/json.js';
import type { Session } from '../../core/model.js';

export const CONTEXT_KEY = 'openai_agents';
/** Applied operations remembered per session (oldest forgotten first). */
export const MAX_OPERATIONS = 200;

export interface HistoryState {
  readonly hidden: readonly number[];
  readonly operations: readonly (readonly [string, string])[];
}

export function stateOf(session: Session): HistoryState {
  const raw = session.context[CONTEXT_KEY];
  const obj = typeof raw === 'object' && raw !== null && !Array.isArray(raw) ? raw : {};
  const hidden = Array.isArray(obj.hidden)
    ? obj.hidden.filter((s): s is number => typeof s === 'number')
    : [];
  const operations = Array.isArray(obj.operations)
    ? obj.operations.filter(
        (op): op is [string, string] =>
          Array.isArray(op) && typeof op[0] === 'string' && typeof op[1] === 'string',
      )
    : [];
  return { hidden, operations };
}

export function withState(session: Session, state: HistoryState): JsonObject {
  const value: JsonObject = {
    hidden: [...state.hidden],
    operations: state.operations.slice(-MAX_OPERATIONS).map(([id, hash]) => [id, hash]),
  };
  return { ...session.context, [CONTEXT_KEY]: value };
}

function canonical(value: JsonValue): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical(value[k] as JsonValue)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** Same transaction, same hash, whatever the key order of its items. */
export function transactionHash(transaction: JsonValue): string {
  return createHash('sha256').update(canonical(transaction)).digest('base64url');
}
