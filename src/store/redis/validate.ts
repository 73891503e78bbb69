/** Input checks made in TypeScript before any script runs: bad input changes nothing stored. */
import { invalidRequest } from '../../core/errors.js';
import { type IdKind, isId } from '../../core/ids.js';
import { assertPlainJson, assertPlainJsonObject, type JsonObject, type JsonValue } from '../../core/json.js';
import { MAX_CURSOR_LENGTH, MAX_INT, MAX_NAME_LENGTH, MAX_TEXT_LENGTH, MAX_TTL_SECONDS } from '../limits.js';
import { refuseUnknownFields } from '../shared/known-fields.js';
import type { ReadScope, Scope } from '../types.js';

export { MAX_NAME_LENGTH, MAX_TEXT_LENGTH, MAX_TTL_SECONDS };

/**
 * Fields checked as text that hold a record's id: refused unless they have its shape, as the other
 * adapters refuse them (an id that cannot exist is bad input, not an empty answer).
 */
const ID_FIELDS: Readonly<Record<string, IdKind>> = {
  task_id: 'task',
  session_id: 'session',
  before: 'checkpoint',
  'session.id': 'session',
  'update_tasks.id': 'task',
  'complete_actions.id': 'action',
};

export function text(value: unknown, name: string, max = MAX_NAME_LENGTH, allowEmpty = false): string {
  if (typeof value !== 'string') throw invalidRequest(`[redis] ${name} must be a string`);
  if (!allowEmpty && value.length === 0) throw invalidRequest(`[redis] ${name} must not be empty`);
  if (value.length > max) throw invalidRequest(`[redis] ${name} is longer than ${max} characters`);
  assertPlainJson(value, name);
  const kind = ID_FIELDS[name];
  if (kind !== undefined && !isId(value, kind)) {
    throw invalidRequest(`[redis] ${name} must be a ${kind} id, got ${JSON.stringify(value)}`);
  }
  return value;
}

export function nullableText(value: unknown, name: string, max = MAX_NAME_LENGTH): string | null {
  return value === undefined || value === null ? null : text(value, name, max);
}

export function checkScope(scope: Scope): Scope {
  if (typeof scope !== 'object' || scope === null) throw invalidRequest('[redis] scope is required');
  text(scope.tenant_id, 'scope.tenant_id');
  text(scope.user_id, 'scope.user_id');
  return scope;
}

export function checkReadScope(scope: ReadScope): ReadScope {
  if (typeof scope !== 'object' || scope === null) throw invalidRequest('[redis] scope is required');
  text(scope.tenant_id, 'scope.tenant_id');
  if (scope.user_id !== undefined) text(scope.user_id, 'scope.user_id');
  return scope;
}

/** A caller-chosen id: must have the shape of `kind` (prefix + 128 bits). */
export function optionalId(value: unknown, kind: IdKind, name: string): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !isId(value, kind)) {
    throw invalidRequest(`[redis] ${name} must be a ${kind} id (prefix plus 128 random bits)`);
  }
  return value;
}

export function ttlSeconds(value: unknown, name: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_TTL_SECONDS) {
    throw invalidRequest(`[redis] ${name} must be an integer from 1 to ${MAX_TTL_SECONDS}`);
  }
  return value;
}

/** An integer from `min` to `max`, and never above PostgreSQL's `integer` (src/store/limits.ts). */
export function integer(value: unknown, name: string, min: number, max: number): number {
  const top = Math.min(max, MAX_INT);
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > top) {
    throw invalidRequest(`[redis] ${name} must be an integer from ${min} to ${top}, got ${String(value)}`);
  }
  return value;
}

export function limit(value: unknown, fallback: number, max: number): number {
  return value === undefined ? fallback : integer(value, 'limit', 1, max);
}

export function oneOf<T extends string>(value: unknown, allowed: readonly T[], name: string): T {
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
    throw invalidRequest(
      `[redis] ${name} must be one of ${allowed.join(', ')}, not ${JSON.stringify(value)}`,
    );
  }
  return value as T;
}

export function jsonObject(value: unknown, name: string): JsonObject {
  assertPlainJsonObject(value, name);
  return value;
}

export function jsonValue(value: unknown, name: string): JsonValue {
  assertPlainJson(value, name);
  return value;
}

export function version(value: unknown): number {
  return integer(value, 'expected_version', 1, MAX_INT);
}

/** Refuses a field of `value` (an object) that is not in `known`, naming it. */
export function knownFields(value: unknown, known: readonly string[], path: string): void {
  refuseUnknownFields(value, known, path, (message) => {
    throw invalidRequest(`[redis] ${message}`);
  });
}

/** Refuses a list query that is not an object or has a field the list does not take. */
export function query(value: unknown, known: readonly string[]): void {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw invalidRequest('[redis] query must be an object');
  knownFields(value, known, 'query');
}

/** Names a list and the caller it was listed for: a cursor opens only for the same list and scope. */
export function cursorList(name: string, scope: ReadScope): string {
  return JSON.stringify([name, scope.tenant_id, scope.user_id ?? null]);
}

/**
 * A list cursor: the list it belongs to and an index member (the caller's own record: its creation time and
 * id), base64url-encoded. Nothing in it is another user's.
 */
export function encodeCursor(list: string, member: string): string {
  return Buffer.from(JSON.stringify([list, member]), 'utf8').toString('base64url');
}

export function decodeCursor(list: string, cursor: string | null | undefined): string | null {
  if (cursor === undefined || cursor === null) return null;
  if (typeof cursor !== 'string' || cursor.length > MAX_CURSOR_LENGTH || !/^[A-Za-z0-9_-]+$/.test(cursor)) {
    throw invalidRequest('[redis] cursor is not one this store handed out');
  }
  let body: unknown;
  try {
    body = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw invalidRequest('[redis] cursor is not one this store handed out');
  }
  if (!Array.isArray(body) || body.length !== 2 || typeof body[1] !== 'string')
    throw invalidRequest('[redis] cursor is not one this store handed out');
  if (body[0] !== list)
    throw invalidRequest('[redis] cursor is not one this store handed out for this list and this caller');
  return body[1];
}
