import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AgentStateError } from '../../src/core/errors.js';
import {
  assertPlainJson,
  assertPlainJsonObject,
  canonicalJson,
  cloneJson,
  type JsonValue,
  MAX_JSON_DEPTH,
} from '../../src/core/json.js';
import { expectedPath, jsonValue, levelsArb, plant, rootNameArb } from './json-arbitraries.js';
import { NON_JSON_CASES } from './non-json-cases.js';

function refusal(run: () => void): AgentStateError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(AgentStateError);
    return error as AgentStateError;
  }
  throw new Error('expected the guard to refuse the value');
}

function nested(depth: number): JsonValue {
  let value: JsonValue = 'leaf';
  for (let i = 0; i < depth; i++) value = i % 2 === 0 ? [value] : { n: value };
  return value;
}

/** Adds an element or a key to every array and object inside `value`. */
function markEveryContainer(value: JsonValue): void {
  if (value === null || typeof value !== 'object') return;
  const children = Array.isArray(value) ? [...value] : Object.values(value);
  for (const child of children) markEveryContainer(child);
  if (Array.isArray(value)) value.push('marker');
  else value.marker_key_added_by_test = 'marker';
}

describe('assertPlainJson accepts plain JSON', () => {
  it('every JSON value passes and round-trips unchanged through JSON.stringify/parse', () => {
    fc.assert(
      fc.property(jsonValue(), rootNameArb, (value, root) => {
        const before = JSON.stringify(value);
        assertPlainJson(value, root);
        expect(JSON.stringify(value)).toBe(before); // the guard changes nothing
        const copy = JSON.parse(before) as JsonValue;
        expect(copy).toEqual(value);
        expect(JSON.stringify(copy)).toBe(before);
      }),
      { numRuns: 300 },
    );
  });

  it('accepts null-prototype objects, valid surrogate pairs and __proto__ as an own key', () => {
    const bare = Object.create(null) as Record<string, JsonValue>;
    bare.a = 1;
    expect(() => assertPlainJson(bare, 'x')).not.toThrow();
    expect(() => assertPlainJson({ emoji: '😀 \ud83d\ude00' }, 'x')).not.toThrow();
    expect(() => assertPlainJson(JSON.parse('{"__proto__": {"a": [1]}}'), 'x')).not.toThrow();
  });

  it(`accepts ${MAX_JSON_DEPTH} levels of nesting and refuses one more`, () => {
    expect(() => assertPlainJson(nested(MAX_JSON_DEPTH), 'deep')).not.toThrow();
    const error = refusal(() => assertPlainJson(nested(MAX_JSON_DEPTH + 1), 'deep'));
    expect(error.code).toBe('invalid_request');
    expect(error.message).toMatch(new RegExp(`: nesting deeper than ${MAX_JSON_DEPTH} levels$`));
  });
});

describe('assertPlainJson refuses what is not plain JSON, naming its path', () => {
  it('gives the exact path and reason for a Date in task slots', () => {
    const error = refusal(() => assertPlainJson({ date: new Date(0) }, 'task.slots'));
    expect(error.code).toBe('invalid_request');
    expect(error.message).toBe('task.slots.date: Date instance is not plain JSON; store an ISO-8601 string');
    expect(error.details).toEqual({ path: 'task.slots.date' });
  });

  it('names the root when the value itself is refused, and indexes and odd keys in brackets', () => {
    expect(refusal(() => assertPlainJson(Number.NaN)).message).toBe('(root): NaN is not plain JSON');
    expect(refusal(() => assertPlainJson({ a: [0, { 'my key': 1n }] }, 'v')).message).toBe(
      'v.a[1]["my key"]: BigInt is not plain JSON; store it as a string',
    );
  });

  for (const bad of NON_JSON_CASES) {
    it(`refuses ${bad.name} at a random path inside a random JSON value`, () => {
      fc.assert(
        fc.property(levelsArb, rootNameArb, (levels, root) => {
          const value = bad.make();
          const planted = plant(levels, value);
          bad.link?.(value, planted.root);
          const path = expectedPath(root, [...planted.segments, ...bad.inside]);
          const error = refusal(() => assertPlainJson(planted.root, root));
          expect(error.code).toBe('invalid_request');
          expect(error.message).toBe(`${path}: ${bad.reason}`);
          expect(error.details).toEqual({ path });
        }),
        { numRuns: 60 },
      );
    });
  }

  it('the planted value is the only fault: with null in its place the same tree passes', () => {
    fc.assert(
      fc.property(levelsArb, fc.constantFrom(...NON_JSON_CASES), (levels, bad) => {
        const planted = plant(levels, bad.make());
        if (planted.holder === null) return;
        const { container, segment } = planted.holder;
        if ('index' in segment) (container as unknown[])[segment.index] = null;
        else (container as Record<string, unknown>)[segment.key] = null;
        expect(() => assertPlainJson(planted.root, 'v')).not.toThrow();
      }),
      { numRuns: 200 },
    );
  });
});

describe('assertPlainJsonObject', () => {
  it('refuses anything but an object at the root', () => {
    for (const value of [null, [], 'x', 1, true, undefined]) {
      const error = refusal(() => assertPlainJsonObject(value, 'session.context'));
      expect(error.code).toBe('invalid_request');
      expect(error.message).toBe('session.context: must be a JSON object');
    }
  });

  it('checks the inside of an object like assertPlainJson', () => {
    expect(() => assertPlainJsonObject({ a: [1, { b: 'c' }] }, 'ctx')).not.toThrow();
    expect(refusal(() => assertPlainJsonObject({ a: [new Set()] }, 'ctx')).message).toBe(
      'ctx.a[0]: Set is not plain JSON; store an array',
    );
  });
});

describe('cloneJson and canonicalJson', () => {
  it('cloneJson returns an equal value that shares nothing with the original', () => {
    fc.assert(
      fc.property(jsonValue(), (value) => {
        const copy = cloneJson(value);
        expect(copy).toEqual(value);
        if (value === null || typeof value !== 'object') return;
        const before = JSON.stringify(value);
        markEveryContainer(copy);
        expect(JSON.stringify(value)).toBe(before);
      }),
      { numRuns: 200 },
    );
  });

  it('canonicalJson parses back to the value and ignores key order', () => {
    fc.assert(
      fc.property(jsonValue(), (value) => {
        const text = canonicalJson(value);
        expect(JSON.parse(text)).toEqual(value);
        const reordered = JSON.parse(JSON.stringify(value), (_key, v: JsonValue) => {
          if (v === null || typeof v !== 'object' || Array.isArray(v)) return v;
          return Object.fromEntries(Object.entries(v).reverse());
        }) as JsonValue;
        expect(canonicalJson(reordered)).toBe(text);
      }),
      { numRuns: 200 },
    );
  });
});
