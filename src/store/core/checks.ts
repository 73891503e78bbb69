/**
 * The input checks of every store, written once. Every failure is `invalid_request` with a message starting
 * `[adapter]` that names the offending field; nothing is written before all checks of a call have passed.
 */

import { AgentStateError, invalidRequest } from '../../core/errors.js';
import { type IdKind, isId } from '../../core/ids.js';
import {
  assertPlainJson,
  assertPlainJsonObject,
  cloneJson,
  type JsonObject,
  type JsonValue,
} from '../../core/json.js';
import { MAX_MESSAGES_PER_APPEND, maxInteger, maxTextLength, messageIndex } from '../limits.js';
import { refuseUnknownFields } from '../shared/known-fields.js';
import type { ReadScope, Scope } from '../types.js';

function nonEmpty(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0;
}

export class Checks {
  constructor(readonly adapter: string) {}

  fail(message: string, details?: Readonly<Record<string, unknown>>): never {
    throw invalidRequest(`[${this.adapter}] ${message}`, details);
  }

  scope(scope: Scope, path = 'scope'): void {
    if (typeof scope !== 'object' || scope === null)
      this.fail(`${path} must be an object with tenant_id and user_id`);
    if (!nonEmpty(scope.tenant_id)) this.fail(`${path}.tenant_id must be a non-empty string`);
    if (!nonEmpty(scope.user_id)) this.fail(`${path}.user_id must be a non-empty string`);
    this.text(scope.tenant_id, `${path}.tenant_id`);
    this.text(scope.user_id, `${path}.user_id`);
  }

  /** True when a record of (tenant, user) is inside the scope. */
  static inScope(scope: ReadScope, record: { tenant_id: string; user_id: string }): boolean {
    return (
      record.tenant_id === scope.tenant_id &&
      (scope.user_id === undefined || scope.user_id === record.user_id)
    );
  }

  /** A read scope: the tenant is required; `user_id`, when present, must be a non-empty string. */
  readScope(scope: ReadScope): void {
    if (typeof scope !== 'object' || scope === null) this.fail('scope must be an object with tenant_id');
    if (!nonEmpty(scope.tenant_id)) this.fail('scope.tenant_id must be a non-empty string');
    if (scope.user_id !== undefined && !nonEmpty(scope.user_id)) {
      this.fail('scope.user_id must be a non-empty string when present (omit it for the whole tenant)');
    }
    this.text(scope.tenant_id, 'scope.tenant_id');
    if (scope.user_id !== undefined) this.text(scope.user_id, 'scope.user_id');
  }

  id(value: unknown, kind: IdKind, field: string): string {
    if (typeof value !== 'string' || !isId(value, kind)) {
      this.fail(`${field} must be a ${kind} id, got ${JSON.stringify(value) ?? String(value)}`);
    }
    return value;
  }

  optionalId(value: unknown, kind: IdKind, field: string): string | null {
    if (value === undefined || value === null) return null;
    return this.id(value, kind, field);
  }

  /** A string that must not be empty and must be valid text. */
  name(value: unknown, field: string): string {
    if (!nonEmpty(value)) this.fail(`${field} must be a non-empty string`);
    return this.text(value, field);
  }

  /** Any string that is valid text (empty allowed), no longer than the field's bound (src/store/limits.ts). */
  text(value: unknown, field: string): string {
    if (typeof value !== 'string') this.fail(`${field} must be a string`);
    const max = maxTextLength(field);
    if (value.length > max) this.fail(`${field} must be at most ${max} characters, got ${value.length}`);
    this.guard(value, field);
    return value;
  }

  /** An integer from 1 to the field's bound: a TTL's, or PostgreSQL's `integer` (src/store/limits.ts). */
  positiveInt(value: unknown, field: string): number {
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
      this.fail(`${field} must be a positive integer, got ${String(value)}`);
    }
    this.atMost(value, field);
    return value;
  }

  nonNegativeInt(value: unknown, field: string): number {
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
      this.fail(`${field} must be an integer >= 0, got ${String(value)}`);
    }
    this.atMost(value, field);
    return value;
  }

  /** An integer option: `fallback` when absent, else at least `min` (0 or 1) and within its bound. */
  intOption<F extends number | undefined>(
    value: unknown,
    field: string,
    fallback: F,
    min: 0 | 1,
  ): number | F {
    if (value === undefined) return fallback;
    return min === 0 ? this.nonNegativeInt(value, field) : this.positiveInt(value, field);
  }

  private atMost(value: number, field: string): void {
    const max = maxInteger(field);
    if (value > max) this.fail(`${field} must be at most ${max}, got ${String(value)}`);
  }

  /** A page size from 1 to `max`; absent means `fallback` (null is not absent: PageQuery.limit is a number). */
  limit(value: unknown, field: string, fallback: number, max: number): number {
    if (value === undefined) return fallback;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > max) {
      this.fail(`${field} must be an integer from 1 to ${max}, got ${String(value)}`);
    }
    return value;
  }

  oneOf<T extends string>(value: unknown, allowed: readonly T[], field: string): T {
    if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
      this.fail(
        `${field} must be one of ${allowed.join(', ')}, got ${JSON.stringify(value) ?? String(value)}`,
      );
    }
    return value as T;
  }

  /** The plain-JSON guard, with the adapter's name on the error. Returns a deep copy. */
  json(value: unknown, path: string): JsonValue {
    this.guard(value, path);
    return cloneJson(value as JsonValue);
  }

  jsonObject(value: unknown, path: string): JsonObject {
    try {
      assertPlainJsonObject(value, path);
    } catch (error) {
      this.prefixed(error);
    }
    return cloneJson(value);
  }

  /** Refuses a patch or input that is not an object, or (given `known`) one with a field not in it. */
  record(value: unknown, field: string, known?: readonly string[]): void {
    const index = messageIndex(field);
    if (index !== null && index >= MAX_MESSAGES_PER_APPEND) {
      this.fail(
        `${field.slice(0, field.lastIndexOf('['))} must hold at most ${MAX_MESSAGES_PER_APPEND} messages`,
      );
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value))
      this.fail(`${field} must be an object`);
    if (known !== undefined) refuseUnknownFields(value, known, field, (message) => this.fail(message));
  }

  private guard(value: unknown, path: string): void {
    try {
      assertPlainJson(value, path);
    } catch (error) {
      this.prefixed(error);
    }
  }

  private prefixed(error: unknown): never {
    if (error instanceof AgentStateError) {
      throw new AgentStateError(error.code, `[${this.adapter}] ${error.message}`, {
        ...(error.details === undefined ? {} : { details: error.details }),
        cause: error,
      });
    }
    throw error;
  }
}
