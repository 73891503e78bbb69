/** cloneJsonSharing: a copy of a value that keeps the parts equal to a previous value as that value's own. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { cloneJson, cloneJsonSharing, type JsonObject, type JsonValue } from '../../src/core/json.js';
import { jsonValue } from './json-arbitraries.js';

/** Every array and object inside `value`, itself included. */
function containers(value: JsonValue, into = new Set<object>()): Set<object> {
  if (value === null || typeof value !== 'object') return into;
  into.add(value);
  for (const child of Array.isArray(value) ? value : Object.values(value)) containers(child, into);
  return into;
}

/** True when some container of `value` is one of `others`. */
function sharesWith(value: JsonValue, others: Set<object>): boolean {
  for (const container of containers(value)) if (others.has(container)) return true;
  return false;
}

/** The checks every result must pass: equal to `value` (key order included), nothing of it shared. */
function expectCopyOf(result: JsonValue, value: JsonValue): void {
  expect(result).toEqual(value);
  expect(JSON.stringify(result)).toBe(JSON.stringify(value));
  expect(sharesWith(result, containers(value))).toBe(false);
}

describe('cloneJsonSharing', () => {
  it('copies any value against any previous one, changing neither', () => {
    fc.assert(
      fc.property(jsonValue(), fc.option(jsonValue(), { nil: undefined }), (value, previous) => {
        const before = [JSON.stringify(value), JSON.stringify(previous)];
        const result = cloneJsonSharing(value, previous);
        expectCopyOf(result, value);
        expect([JSON.stringify(value), JSON.stringify(previous)]).toEqual(before);
      }),
      { numRuns: 500 },
    );
  });

  it('gives back the previous value itself when the value equals it', () => {
    fc.assert(
      fc.property(jsonValue(), (previous) => {
        const value = cloneJson(previous);
        const result = cloneJsonSharing(value, previous);
        expectCopyOf(result, value);
        expect(result).toBe(previous);
      }),
      { numRuns: 300 },
    );
  });

  it("keeps a growing run's unchanged parts once: old items, unchanged channels", () => {
    fc.assert(
      fc.property(
        fc.array(jsonValue(3), { minLength: 1, maxLength: 12 }),
        jsonValue(3),
        jsonValue(3),
        jsonValue(2),
        (items, added, task, changed) => {
          const previous: JsonObject = { messages: items, task, step: 1 };
          const value: JsonObject = {
            messages: [...cloneJson(items), added],
            task: cloneJson(task),
            step: changed,
          };
          const result = cloneJsonSharing(value, previous) as JsonObject;
          expectCopyOf(result, value);
          const messages = result.messages as JsonValue[];
          for (let i = 0; i < items.length; i++) expect(messages[i]).toBe(items[i]);
          expect(result.task).toBe(task);
          expect(result).not.toBe(previous);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('shares nothing where keys moved, vanished or changed kind', () => {
    const shared = { deep: [1, 2, 3] };
    const previous: JsonObject = { a: shared, b: [shared], c: { x: 1 } };
    // Another order of the same keys: equal parts shared, the object itself new.
    const reordered = cloneJsonSharing(
      { b: [{ deep: [1, 2, 3] }], a: { deep: [1, 2, 3] }, c: { x: 1 } },
      previous,
    );
    expect(Object.keys(reordered)).toEqual(['b', 'a', 'c']);
    expect(reordered).not.toBe(previous);
    expect(reordered.a).toBe(shared);
    expect(reordered.c).toBe(previous.c);
    // A key fewer: a new object with the rest shared.
    const fewer = cloneJsonSharing({ a: { deep: [1, 2, 3] } }, previous);
    expect(fewer).toEqual({ a: { deep: [1, 2, 3] } });
    expect(fewer).not.toBe(previous);
    expect(fewer.a).toBe(shared);
    // An array cut short: a new array of the previous items.
    const cut = cloneJsonSharing([1, { deep: [1, 2, 3] }], [1, shared, 3]);
    expect(cut).toEqual([1, { deep: [1, 2, 3] }]);
    expect(cut[1]).toBe(shared);
    // An object where an array was, and back.
    expect(cloneJsonSharing({ a: [1] }, { a: { 0: 1 } })).toEqual({ a: [1] });
    expect(cloneJsonSharing({ a: { 0: 1 } }, { a: [1] })).toEqual({ a: { 0: 1 } });
  });

  it('keeps an own __proto__ key as data', () => {
    const value = JSON.parse('{"__proto__": {"x": 1}, "y": 2}') as JsonObject;
    const previous = JSON.parse('{"__proto__": {"x": 1}, "y": 3}') as JsonObject;
    const result = cloneJsonSharing(value, previous);
    expect(Object.getPrototypeOf(result)).toBe(Object.prototype);
    expect(Object.keys(result)).toEqual(['__proto__', 'y']);
    expect(JSON.stringify(result)).toBe(JSON.stringify(value));
    expect(Object.getOwnPropertyDescriptor(result, '__proto__')?.value).toBe(
      Object.getOwnPropertyDescriptor(previous, '__proto__')?.value,
    );
  });
});
