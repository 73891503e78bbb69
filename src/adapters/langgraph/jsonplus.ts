/**
 * LangGraph's default serializer (`JsonPlusSerializer`) without its text round trips, for values it would
 * write as plain JSON. Its `dumpsTyped` of such a value is that value's JSON text, which the saver parsed
 * back to store the value itself: here the value is stored as it is, after one walk that checks it is plain.
 * Its `loadsTyped` parses the text and then rebuilds every object (an async walk), reviving LangChain's `lc`
 * records; here the value read from the store is walked once, and only an object that holds an `lc` field
 * (or a `__proto__` key) goes through the serializer itself, so what comes back is what it would give.
 * Any other serializer, or a subclass, keeps the plain serializer calls (see codec.ts).
 */
import { JsonPlusSerializer, type SerializerProtocol } from '@langchain/langgraph-checkpoint';
import { type JsonValue, MAX_JSON_DEPTH, wellFormed } from '../../core/json.js';

/** True for the default serializer itself (not a subclass, which may write otherwise). */
export function isJsonPlus(serde: SerializerProtocol): boolean {
  return Object.getPrototypeOf(serde) === JsonPlusSerializer.prototype;
}

/**
 * True when `value` is plain JSON that JsonPlusSerializer writes unchanged and the store accepts: finite
 * numbers other than -0, well-formed strings, arrays without holes, objects of Object.prototype (or none)
 * without symbol keys, at most MAX_JSON_DEPTH deep (so a cycle is refused, not walked forever), and no
 * object the serializer rewrites (a `Send` given as `{ lg_name: 'Send' }`). `lenient` leaves out what the
 * store's own guard refuses (ill-formed text, symbol keys, arrays of a subclass): a caller that passes a
 * value so checked to the store retries strictly when the store refuses it.
 */
export function isJsonPlusPlain(value: unknown, lenient = false, depth = 0): value is JsonValue {
  switch (typeof value) {
    case 'string':
      return lenient || wellFormed(value);
    case 'boolean':
      return true;
    case 'number':
      return Number.isFinite(value) && !Object.is(value, -0);
    case 'object': {
      if (value === null) return true;
      if (depth >= MAX_JSON_DEPTH) return false;
      if (Array.isArray(value)) {
        if (!lenient && Object.getPrototypeOf(value) !== Array.prototype) return false;
        for (let i = 0; i < value.length; i++) {
          if (!(i in value) || !isJsonPlusPlain(value[i], lenient, depth + 1)) return false;
        }
        return true;
      }
      const proto = Object.getPrototypeOf(value);
      if (proto !== Object.prototype && proto !== null) return false;
      if (!lenient && Object.getOwnPropertySymbols(value).length > 0) return false;
      const record = value as Record<string, unknown>;
      if (record.lg_name === 'Send') return false;
      // for-in also visits inherited keys, which can only refuse more: JSON text holds own keys alone.
      for (const key in record) {
        if (!lenient && !wellFormed(key)) return false;
        if (!isJsonPlusPlain(record[key], lenient, depth + 1)) return false;
      }
      return true;
    }
    default:
      return false;
  }
}

interface Deferred {
  readonly parent: Record<string, unknown> | unknown[];
  readonly key: string | number;
  readonly node: JsonValue;
}

function isPlainObject(value: object): value is Record<string, unknown> {
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** An object the serializer itself must rebuild: one it may revive, or one with a `__proto__` key. */
function needsSerde(value: Record<string, unknown>): boolean {
  return Object.hasOwn(value, 'lc') || Object.hasOwn(value, '__proto__');
}

/**
 * How a value read may be handed out: 'owned' (read for this call alone: it may become the value itself,
 * revived in place), 'copy' (the value shares nothing with what was read), or the set of objects handed
 * out so far by one read of several values (a page of history, whose values may share parts): a value
 * that holds none of them and nothing to revive is handed out as it is, and its objects join the set;
 * any other is copied.
 */
export type Reuse = 'owned' | 'copy' | Set<object>;

/** The value JsonPlusSerializer's `loadsTyped('json', JSON.stringify(data))` gives; `reuse` as above. */
export async function reviveJsonPlus(serde: SerializerProtocol, data: JsonValue, reuse: Reuse) {
  // The common cases: nothing to revive (and nothing shared), one read-only scan.
  if (reuse === 'owned' && !needsAny(data, 0)) return data;
  if (reuse instanceof Set && reusable(data, reuse, 0)) return data;
  if (typeof data === 'object' && data !== null && !Array.isArray(data) && needsSerde(data)) {
    return serde.loadsTyped('json', JSON.stringify(data));
  }
  const copy = reuse !== 'owned';
  const deferred: Deferred[] = [];
  const out = visit(data, copy, deferred);
  if (deferred.length > 0) {
    await Promise.all(
      deferred.map(async ({ parent, key, node }) => {
        const revived: unknown = await serde.loadsTyped('json', JSON.stringify(node));
        // A parent that needs no serializer has no `__proto__` key, so a plain assignment sets its own key.
        if (Array.isArray(parent)) parent[key as number] = revived;
        else parent[key as string] = revived;
      }),
    );
  }
  return out;
}

/**
 * True when `value` holds no object of `seen` and none that needs the serializer; its objects are added
 * to `seen` as they are walked (on false, some may be: that only makes later values copy more).
 */
function reusable(value: unknown, seen: Set<object>, depth: number): boolean {
  if (typeof value !== 'object' || value === null) return true;
  if (depth >= MAX_JSON_DEPTH || seen.has(value)) return false;
  if (Array.isArray(value)) {
    seen.add(value);
    for (let i = 0; i < value.length; i++) if (!reusable(value[i], seen, depth + 1)) return false;
    return true;
  }
  if (!isPlainObject(value) || needsSerde(value)) return false;
  seen.add(value);
  for (const key in value) if (!reusable(value[key], seen, depth + 1)) return false;
  return true;
}

/** Whether any object in `value` needs the serializer (true as well past MAX_JSON_DEPTH: walk it then). */
function needsAny(value: unknown, depth: number): boolean {
  if (typeof value !== 'object' || value === null) return false;
  if (depth >= MAX_JSON_DEPTH) return true;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (needsAny(value[i], depth + 1)) return true;
    return false;
  }
  if (!isPlainObject(value)) return false;
  if (needsSerde(value)) return true;
  for (const key in value) if (needsAny(value[key], depth + 1)) return true;
  return false;
}

function visit(value: unknown, copy: boolean, deferred: Deferred[]): unknown {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) {
    const out: unknown[] = copy ? new Array(value.length) : value;
    for (let i = 0; i < value.length; i++) out[i] = child(value[i], out, i, copy, deferred);
    return out;
  }
  if (!isPlainObject(value)) return value;
  if (!copy) {
    for (const key of Object.keys(value)) value[key] = child(value[key], value, key, copy, deferred);
    return value;
  }
  const out: Record<string, unknown> = {};
  for (const key in value) {
    if (Object.hasOwn(value, key)) out[key] = child(value[key], out, key, copy, deferred);
  }
  return out;
}

function child(
  value: unknown,
  parent: Record<string, unknown> | unknown[],
  key: string | number,
  copy: boolean,
  deferred: Deferred[],
): unknown {
  if (typeof value !== 'object' || value === null) return value;
  if (!Array.isArray(value) && isPlainObject(value) && needsSerde(value)) {
    deferred.push({ parent, key, node: value as JsonValue });
    return null; // filled in once the serializer has rebuilt it
  }
  return visit(value, copy, deferred);
}
