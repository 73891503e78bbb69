/**
 * Input checks of the memory store. Every failure is `invalid_request` with a message starting `[memory]`
 * that names the offending field; nothing is written before all checks of a call have passed.
 */

import { AgentStateError, invalidRequest } from '../../core/errors.js';
import { type IdKind, isId } from '../../core/ids.js';
import { assertPlainJson, assertPlainJsonObject, type JsonObject, type JsonValue } from '../../core/json.js';
import { MAX_MESSAGES_PER_APPEND, maxInteger, maxTextLength, messageIndex } from '../limits.js';
import { refuseUnknownFields } from '../shared/known-fields.js';
import type { ReadScope, Scope } from '../types.js';

export const ADAPTER = 'memory';

export function fail(message: string, details?: Readonly<Record<string, unknown>>): never {
  throw invalidRequest(`[${ADAPTER}] ${message}`, details);
}

function nonEmpty(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0;
}

export function checkScope(scope: Scope): void {
  if (typeof scope !== 'object' || scope === null) fail('scope must be an object with tenant_id and user_id');
  if (!nonEmpty(scope.tenant_id)) fail('scope.tenant_id must be a non-empty string');
  if (!nonEmpty(scope.user_id)) fail('scope.user_id must be a non-empty string');
  text(scope.tenant_id, 'scope.tenant_id');
  text(scope.user_id, 'scope.user_id');
}

/** A read scope: the tenant is required; `user_id`, when present, must be a non-empty string. */
export function checkReadScope(scope: ReadScope): void {
  if (typeof scope !== 'object' || scope === null) fail('scope must be an object with tenant_id');
  if (!nonEmpty(scope.tenant_id)) fail('scope.tenant_id must be a non-empty string');
  if (scope.user_id !== undefined && !nonEmpty(scope.user_id)) {
    fail('scope.user_id must be a non-empty string when present (omit it for the whole tenant)');
  }
  text(scope.tenant_id, 'scope.tenant_id');
  if (scope.user_id !== undefined) text(scope.user_id, 'scope.user_id');
}

/** True when a record of (tenant, user) is inside the scope. */
export function inScope(scope: ReadScope, record: { tenant_id: string; user_id: string }): boolean {
  return (
    record.tenant_id === scope.tenant_id && (scope.user_id === undefined || scope.user_id === record.user_id)
  );
}

export function checkId(value: unknown, kind: IdKind, field: string): string {
  if (typeof value !== 'string' || !isId(value, kind)) {
    fail(`${field} must be a ${kind} id, got ${JSON.stringify(value) ?? String(value)}`);
  }
  return value;
}

export function optionalId(value: unknown, kind: IdKind, field: string): string | null {
  if (value === undefined || value === null) return null;
  return checkId(value, kind, field);
}

/** A string that must not be empty and must be valid text. */
export function name(value: unknown, field: string): string {
  if (!nonEmpty(value)) fail(`${field} must be a non-empty string`);
  return text(value, field);
}

/** Any string that is valid text (empty allowed), no longer than the field's bound (src/store/limits.ts). */
export function text(value: unknown, field: string): string {
  if (typeof value !== 'string') fail(`${field} must be a string`);
  const max = maxTextLength(field);
  if (value.length > max) fail(`${field} must be at most ${max} characters, got ${value.length}`);
  guard(value, field);
  return value;
}

function atMost(value: number, field: string): void {
  const max = maxInteger(field);
  if (value > max) fail(`${field} must be at most ${max}, got ${String(value)}`);
}

/** An integer from 1 to the field's bound: a TTL's, or PostgreSQL's `integer` (src/store/limits.ts). */
export function positiveInt(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
    fail(`${field} must be a positive integer, got ${String(value)}`);
  }
  atMost(value, field);
  return value;
}

export function nonNegativeInt(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    fail(`${field} must be an integer >= 0, got ${String(value)}`);
  }
  atMost(value, field);
  return value;
}

/** A page size from 1 to `max`; absent means `fallback` (null is not absent: PageQuery.limit is a number). */
export function limit(value: unknown, field: string, fallback: number, max: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > max) {
    fail(`${field} must be an integer from 1 to ${max}, got ${String(value)}`);
  }
  return value;
}

export function oneOf<T extends string>(value: unknown, allowed: readonly T[], field: string): T {
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
    fail(`${field} must be one of ${allowed.join(', ')}, got ${JSON.stringify(value) ?? String(value)}`);
  }
  return value as T;
}

function prefixed(error: unknown): never {
  if (error instanceof AgentStateError) {
    throw new AgentStateError(error.code, `[${ADAPTER}] ${error.message}`, {
      ...(error.details === undefined ? {} : { details: error.details }),
      cause: error,
    });
  }
  throw error;
}

/** The plain-JSON guard, with the adapter's name on the error. Returns a deep copy. */
export function json(value: unknown, path: string): JsonValue {
  guard(value, path);
  return structuredClone(value as JsonValue);
}

export function jsonObject(value: unknown, path: string): JsonObject {
  try {
    assertPlainJsonObject(value, path);
  } catch (error) {
    prefixed(error);
  }
  return structuredClone(value);
}

function guard(value: unknown, path: string): void {
  try {
    assertPlainJson(value, path);
  } catch (error) {
    prefixed(error);
  }
}

/** Refuses a patch or input that is not an object, or (given `known`) one with a field not in it. */
export function record(value: unknown, field: string, known?: readonly string[]): void {
  const index = messageIndex(field);
  if (index !== null && index >= MAX_MESSAGES_PER_APPEND) {
    fail(`${field.slice(0, field.lastIndexOf('['))} must hold at most ${MAX_MESSAGES_PER_APPEND} messages`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) fail(`${field} must be an object`);
  if (known !== undefined) refuseUnknownFields(value, known, field, fail);
}
