/**
 * Memory namespaces and the rules for their names. Namespaces that start with `_` are reserved for
 * agentstate itself (for example `_summaries:<session_id>`, where compaction keeps its summaries); the
 * typed API refuses them unless asked for explicitly, and user-facing surfaces should hide them.
 */
import { invalidRequest } from '../core/errors.js';
import type { Scope } from '../store/types.js';

/** Preferences the user chose (cabin class, language, passenger name). */
export const PREFERENCES = 'preferences';
/** Facts about the user (home airport, employer). */
export const FACTS = 'facts';
/** The namespaces the context builder reads by default. */
export const CONTEXT_NAMESPACES: readonly string[] = [PREFERENCES, FACTS];

export const RESERVED_PREFIX = '_';
const NAMESPACE = /^[A-Za-z0-9_][A-Za-z0-9_.:-]{0,127}$/;
const MAX_KEY = 256;

export function isReservedNamespace(namespace: string): boolean {
  return namespace.startsWith(RESERVED_PREFIX);
}

export function checkNamespace(namespace: unknown, allowReserved: boolean): string {
  if (typeof namespace !== 'string' || !NAMESPACE.test(namespace)) {
    throw invalidRequest(
      `memory namespace ${JSON.stringify(namespace)} is not valid: 1-128 of letters, digits, _ . : - (not starting with . : -)`,
      { field: 'namespace' },
    );
  }
  if (!allowReserved && isReservedNamespace(namespace)) {
    throw invalidRequest(
      `memory namespace ${JSON.stringify(namespace)} is reserved (names starting with _ are)`,
      {
        field: 'namespace',
      },
    );
  }
  return namespace;
}

export function checkKey(key: unknown, field = 'key'): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
  if (typeof key !== 'string' || key === '' || key.length > MAX_KEY || /[\u0000-\u001f\u007f]/.test(key)) {
    throw invalidRequest(
      `memory ${field} ${JSON.stringify(key)} is not valid: 1-${MAX_KEY} characters, no control characters`,
      {
        field,
      },
    );
  }
  return key;
}

export function checkTtl(ttl: unknown): number | null {
  if (ttl === undefined || ttl === null) return null;
  if (typeof ttl !== 'number' || !Number.isInteger(ttl) || ttl < 1) {
    throw invalidRequest(`memory ttl_seconds must be a positive integer or null, got ${String(ttl)}`, {
      field: 'ttl_seconds',
    });
  }
  return ttl;
}

export function checkScope(scope: Scope): Scope {
  if (
    typeof scope !== 'object' ||
    scope === null ||
    typeof scope.tenant_id !== 'string' ||
    scope.tenant_id === '' ||
    typeof scope.user_id !== 'string' ||
    scope.user_id === ''
  ) {
    throw invalidRequest('memory needs a scope with a tenant_id and a user_id', { field: 'scope' });
  }
  return { tenant_id: scope.tenant_id, user_id: scope.user_id };
}
