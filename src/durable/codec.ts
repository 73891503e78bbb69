/**
 * How a durable run's recorded values get their types back. A value is recorded as plain JSON; on replay
 * the JSON is turned into the caller's type again by a codec, or by a zod schema (which validates it).
 * Without either, the value must be plain JSON itself and comes back as recorded.
 *
 * The value a step returns is always the one decoded from what was recorded, on the first run as on a
 * replay, so code after it sees the same value either way.
 */
import type { z } from 'zod';
import { AgentStateError, invalidRequest } from '../core/errors.js';
import { assertPlainJson, cloneJson, isPlainJson, type JsonValue } from '../core/json.js';

/** Turns a value into plain JSON for the journal, and back. `decode(encode(v))` must equal `v`. */
export interface Codec<T> {
  encode(value: T): JsonValue;
  decode(json: JsonValue): T;
}

/** How a recorded value is typed: a codec of your own, or a zod schema that parses the recorded JSON. */
export type Typed<T> = { readonly codec: Codec<T> } | { readonly schema: z.ZodType<T> };

/** Plain JSON values, recorded and returned as they are (a copy). */
export function jsonCodec<T extends JsonValue>(): Codec<T> {
  return {
    encode: (value) => cloneJson(value),
    // The only values this codec ever sees are those its own `encode` recorded.
    decode: (json) => cloneJson(json) as T,
  };
}

/** A codec that records a value as JSON and parses it back through `schema`. */
export function schemaCodec<T>(schema: z.ZodType<T>): Codec<T> {
  return {
    encode: (value) => {
      assertPlainJson(value, 'value');
      return cloneJson(value);
    },
    decode: (json) => {
      const parsed = schema.safeParse(json);
      if (parsed.success) return parsed.data;
      const issue = parsed.error.issues[0];
      const where = issue?.path.map(String).join('.') || '(value)';
      throw invalidRequest(`${where}: ${issue?.message ?? 'does not match the schema'}`, {
        path: where,
        issues: parsed.error.issues.map((i) => ({ path: i.path.map(String), message: i.message })),
      });
    },
  };
}

/** Options that may name a codec or a schema (the implementation side of `Typed` overloads). */
export interface MaybeTyped<T> {
  readonly codec?: Codec<T>;
  readonly schema?: z.ZodType<T>;
}

/** The codec `options` name, checked; null when they name neither. */
export function codecIn<T>(options: MaybeTyped<T> | null | undefined, what: string): Codec<T> | null {
  if (options === null || options === undefined) return null;
  const { codec, schema } = options;
  if (codec !== undefined) {
    if (typeof codec?.encode !== 'function' || typeof codec.decode !== 'function')
      throw invalidRequest(`${what}: codec must have encode and decode functions`);
    return codec;
  }
  if (schema !== undefined) {
    if (typeof schema?.safeParse !== 'function') throw invalidRequest(`${what}: schema must be a zod schema`);
    return schemaCodec(schema);
  }
  return null;
}

/**
 * Encodes a value produced now and decodes it again (what a replay would return); `what` names it in the
 * error when it cannot be recorded or does not match its schema.
 */
export function roundTrip<T>(codec: Codec<T>, value: T, what: string): { json: JsonValue; value: T } {
  let json: JsonValue;
  try {
    json = codec.encode(value);
    assertPlainJson(json, 'value');
  } catch (error) {
    throw invalidRequest(`${what}: cannot be recorded: ${describe(error)}`);
  }
  try {
    return { json, value: codec.decode(json) };
  } catch (error) {
    throw invalidRequest(`${what}: ${describe(error)}`);
  }
}

/** Decodes a value recorded by an earlier attempt; a mismatch means the code changed under a live run. */
export function decodeRecorded<T>(codec: Codec<T>, json: JsonValue, what: string): T {
  if (!isPlainJson(json)) throw new AgentStateError('internal', `${what}: the recorded value is not JSON`);
  try {
    return codec.decode(json);
  } catch (error) {
    throw new AgentStateError(
      'internal',
      `${what}: the recorded value no longer decodes (did the code change under a run in flight?): ${describe(error)}`,
    );
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
