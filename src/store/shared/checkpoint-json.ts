/**
 * A fast yes/no form of the plain-JSON guard (src/core/json.ts) for checkpoint channels, the largest
 * values a store takes on its hottest path. It accepts exactly what the guard accepts but builds no JSON
 * paths, so a valid value costs one walk. On `false` the caller runs the guard itself, whose error names
 * the path of what is wrong: the answer is the same either way, only the happy path is cheaper.
 */
import { MAX_JSON_DEPTH } from '../../core/json.js';

/** String.prototype.isWellFormed (Node 20; not in the ES2023 typings): false for a lone surrogate. */
function wellFormed(text: string): boolean {
  return (text as unknown as { isWellFormed(): boolean }).isWellFormed();
}

function plain(value: unknown, ancestors: object[]): boolean {
  switch (typeof value) {
    case 'string':
      return wellFormed(value);
    case 'boolean':
      return true;
    case 'number':
      return Number.isFinite(value) && !Object.is(value, -0);
    case 'object': {
      if (value === null) return true;
      if (ancestors.length >= MAX_JSON_DEPTH || ancestors.includes(value)) return false;
      ancestors.push(value);
      if (Array.isArray(value)) {
        if (Object.getPrototypeOf(value) !== Array.prototype) return false;
        for (let i = 0; i < value.length; i++) {
          if (!(i in value) || !plain(value[i], ancestors)) return false;
        }
      } else {
        const proto = Object.getPrototypeOf(value);
        if (proto !== Object.prototype && proto !== null) return false;
        if (Object.getOwnPropertySymbols(value).length > 0) return false;
        for (const key of Object.keys(value)) {
          if (!wellFormed(key) || !plain((value as Record<string, unknown>)[key], ancestors)) return false;
        }
      }
      ancestors.pop();
      return true;
    }
    default:
      return false;
  }
}

/** True when `value` is a plain JSON object that the guard would accept as it is. */
export function isPlainJsonObject(value: unknown): boolean {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && plain(value, []);
}
