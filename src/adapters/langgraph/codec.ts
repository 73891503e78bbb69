/**
 * LangGraph values through the saver's `serde`, stored as plain JSON. A value the serializer writes as
 * JSON text is stored as that JSON (so a growing message list stays an array and the store keeps only the
 * appended part); anything else (bytes, another serializer's format) is stored as base64 text with its type.
 */
import type { SerializerProtocol } from '@langchain/langgraph-checkpoint';
import { assertPlainJson, type JsonObject, type JsonValue } from '../../core/json.js';
import { isJsonPlus, isJsonPlusPlain, type Reuse, reviveJsonPlus } from './jsonplus.js';

/** 'json' when `data` is the parsed JSON text, `b64:<serde type>` when `data` is base64 of the bytes. */
export type Kind = string;

export interface Encoded {
  readonly kind: Kind;
  readonly data: JsonValue;
}

const decoder = new TextDecoder();
const encoder = new TextEncoder();

function isPlainJson(value: unknown): value is JsonValue {
  try {
    assertPlainJson(value, 'value');
    return true;
  } catch {
    return false;
  }
}

/**
 * The stored form of `value`. With the default serializer a plain JSON value is stored as it is (the
 * caller's own object, not a copy: the store copies or serializes what it keeps, and the saver keeps no
 * reference to it). `lenient` as for `isJsonPlusPlain`: the caller retries strictly if the store refuses.
 */
export async function encodeValue(
  serde: SerializerProtocol,
  value: unknown,
  lenient = false,
): Promise<Encoded> {
  if (isJsonPlus(serde) && isJsonPlusPlain(value, lenient)) return { kind: 'json', data: value };
  const [type, bytes] = await serde.dumpsTyped(value);
  if (type === 'json') {
    const text = typeof bytes === 'string' ? bytes : decoder.decode(bytes);
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    if (parsed !== undefined && isPlainJson(parsed)) return { kind: 'json', data: parsed };
  }
  const raw = typeof bytes === 'string' ? encoder.encode(bytes) : bytes;
  return { kind: `b64:${type}`, data: Buffer.from(raw).toString('base64') };
}

/**
 * The value stored as `data`; `reuse` (see jsonplus.ts) tells whether it may share objects with `data`.
 * Other serializers than the default one always give a value of its own.
 */
export async function decodeValue(
  serde: SerializerProtocol,
  kind: Kind,
  data: JsonValue,
  reuse: Reuse = 'copy',
): Promise<unknown> {
  if (kind === 'json') {
    if (isJsonPlus(serde)) return reviveJsonPlus(serde, data, reuse);
    return serde.loadsTyped('json', JSON.stringify(data));
  }
  if (kind.startsWith('b64:') && typeof data === 'string') {
    return serde.loadsTyped(kind.slice(4), new Uint8Array(Buffer.from(data, 'base64')));
  }
  throw new Error(`[langgraph] stored value of unknown kind ${JSON.stringify(kind)}`);
}

/** Stored form of a whole value kept in metadata: `{k, d}`. */
export function packed(encoded: Encoded): JsonObject {
  return { k: encoded.kind, d: encoded.data };
}

export function unpack(value: JsonValue | undefined): Encoded {
  if (typeof value !== 'object' || value === null || Array.isArray(value) || typeof value.k !== 'string') {
    throw new Error('[langgraph] stored checkpoint is not in the saver format');
  }
  return { kind: value.k, data: value.d ?? null };
}

/** Sets an own property, also for the key `__proto__`. */
export function setOwn<T>(target: Record<string, T>, key: string, value: T): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}
