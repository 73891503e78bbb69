/**
 * fast-check arbitraries shared by the core tests: plain JSON values, and a non-JSON value planted at a
 * random path inside a random JSON value together with the exact path the guard must name.
 */
import fc from 'fast-check';
import type { JsonObject, JsonValue } from '../../src/core/json.js';

/** Replaces -0 (which the guard refuses on purpose) by 0, everywhere in a generated value. */
export function withoutNegativeZero(value: unknown): JsonValue {
  if (typeof value === 'number') return Object.is(value, -0) ? 0 : value;
  if (Array.isArray(value)) return value.map(withoutNegativeZero);
  if (value !== null && typeof value === 'object') {
    const out: JsonObject = {};
    for (const [key, child] of Object.entries(value)) {
      Object.defineProperty(out, key, {
        value: withoutNegativeZero(child),
        enumerable: true,
        writable: true,
      });
    }
    return out;
  }
  return value as JsonValue;
}

/** Any plain JSON value, with full Unicode strings (valid surrogate pairs included) and no -0. */
export const jsonValue = (maxDepth = 4): fc.Arbitrary<JsonValue> =>
  fc.jsonValue({ maxDepth, stringUnit: 'grapheme' }).map(withoutNegativeZero);

export const jsonObject = (maxDepth = 3): fc.Arbitrary<JsonObject> =>
  fc
    .dictionary(fc.string({ unit: 'grapheme' }), jsonValue(maxDepth))
    .map((o) => withoutNegativeZero(o) as JsonObject);

/** One step of a path: an object key or an array index. */
export type Segment = { readonly key: string } | { readonly index: number };

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** The path as the guard writes it: `a.b`, `a[3]`, `a["not an identifier"]`, `(root)` when empty. */
export function expectedPath(root: string, segments: readonly Segment[]): string {
  let path = root;
  for (const segment of segments) {
    if ('index' in segment) path = `${path}[${segment.index}]`;
    else if (IDENTIFIER.test(segment.key)) path = path === '' ? segment.key : `${path}.${segment.key}`;
    else path = `${path}[${JSON.stringify(segment.key)}]`;
  }
  return path === '' ? '(root)' : path;
}

/** A level of the container tree around the planted value: valid siblings and where the value goes. */
interface Level {
  readonly kind: 'object' | 'array';
  readonly key: string;
  readonly siblings: JsonObject;
  readonly before: JsonValue[];
  readonly after: JsonValue[];
}

const keyArb = fc.oneof(
  fc.constantFrom(
    'date',
    'slots',
    'task',
    'messages',
    'x',
    '$ref',
    '_id',
    'my key',
    '0',
    '',
    'a.b',
    '__proto__',
  ),
  fc.string({ unit: 'grapheme', maxLength: 8 }),
);

const levelArb: fc.Arbitrary<Level> = fc.record({
  kind: fc.constantFrom('object' as const, 'array' as const),
  key: keyArb,
  siblings: fc.dictionary(fc.string({ maxLength: 6 }), jsonValue(2), { maxKeys: 3 }),
  before: fc.array(jsonValue(2), { maxLength: 3 }),
  after: fc.array(jsonValue(2), { maxLength: 3 }),
});

export interface Planted {
  readonly root: unknown;
  readonly segments: Segment[];
  /** The object that holds the planted value (its container), or null when it is the root. */
  readonly holder: { container: object; segment: Segment } | null;
}

function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/** Builds a random JSON tree with `bad` at a random path; every other value in the tree is plain JSON. */
export function plant(levels: readonly Level[], bad: unknown): Planted {
  let value: unknown = bad;
  const segments: Segment[] = [];
  let holder: Planted['holder'] = null;
  for (let i = levels.length - 1; i >= 0; i--) {
    const level = levels[i] as Level;
    let container: object;
    let segment: Segment;
    if (level.kind === 'object') {
      const obj: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(level.siblings)) if (k !== level.key) setOwn(obj, k, v);
      setOwn(obj, level.key, value);
      container = obj;
      segment = { key: level.key };
    } else {
      container = [...level.before, value, ...level.after];
      segment = { index: level.before.length };
    }
    if (holder === null) holder = { container, segment };
    segments.unshift(segment);
    value = container;
  }
  return { root: value, segments, holder };
}

export const levelsArb = fc.array(levelArb, { maxLength: 5 });

/** The name a guarded value is checked under: '' or a dotted root such as `task.slots`. */
export const rootNameArb = fc.constantFrom('', 'value', 'task.slots', 'checkpoint.channels', 'memory.value');
