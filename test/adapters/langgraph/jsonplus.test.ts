/**
 * The saver's short cut through LangGraph's default serializer (src/adapters/langgraph/jsonplus.ts): what it
 * stores and reads back is what JsonPlusSerializer's own round trip gives, for plain JSON, LangChain
 * messages and the records the serializer writes for undefined, Set, Map, RegExp, Error and bytes.
 */
import { AIMessage, HumanMessage, ToolMessage } from '@langchain/core/messages';
import { DeltaSnapshot, JsonPlusSerializer } from '@langchain/langgraph-checkpoint';
import { describe, expect, it } from 'vitest';
import { decodeValue, encodeValue } from '../../../src/adapters/langgraph/codec.js';
import {
  isJsonPlus,
  isJsonPlusPlain,
  type Reuse,
  reviveJsonPlus,
} from '../../../src/adapters/langgraph/jsonplus.js';
import type { JsonValue } from '../../../src/core/json.js';

const serde = new JsonPlusSerializer();

async function viaSerde(value: unknown): Promise<unknown> {
  const [type, bytes] = await serde.dumpsTyped(value);
  return serde.loadsTyped(type, bytes);
}

async function viaSaver(value: unknown, reuse: Reuse): Promise<unknown> {
  const encoded = await encodeValue(serde, value);
  // What a store hands back: a fresh copy of what it was given.
  const stored = JSON.parse(JSON.stringify(encoded.data)) as JsonValue;
  return decodeValue(serde, encoded.kind, stored, reuse);
}

const message = (i: number) => ({ id: `m${i}`, role: i % 2 ? 'assistant' : 'user', content: `hello ${i}` });

const VALUES: Record<string, () => unknown> = {
  'plain JSON': () => ({
    messages: [message(1), message(2)],
    task: { step: 3, slots: { a: null, b: true } },
  }),
  'a string': () => 'text',
  'LangChain messages': () => [
    new HumanMessage({ content: 'book a flight', id: 'h1' }),
    new AIMessage({
      content: '',
      id: 'a1',
      tool_calls: [{ id: 'call_1', name: 'search', args: { to: 'LIS' }, type: 'tool_call' }],
    }),
    new ToolMessage({ content: 'found 3', tool_call_id: 'call_1', id: 't1' }),
  ],
  'messages inside plain objects': () => ({ state: { messages: [new HumanMessage('hi')], n: 1 } }),
  'undefined, Set, Map, RegExp, Error, bytes': () => ({
    gone: undefined,
    set: new Set([1, 2]),
    map: new Map([['k', 1]]),
    re: /a+b/gi,
    error: new Error('boom'),
    bytes: new Uint8Array([1, 2, 255]),
    list: [undefined, 1],
  }),
  'a delta snapshot': () => ({ messages: new DeltaSnapshot([1, 2]) }),
  'a Date and -0': () => ({ at: new Date(Date.UTC(2026, 0, 1)), zero: -0 }),
  'a plain object shaped like a LangChain record': () => ({
    lc: 1,
    type: 'not_a_constructor',
    id: ['x'],
    nested: { lc: 2, type: 'undefined' },
  }),
};

describe('the default serializer without its text round trips', () => {
  it('is used for JsonPlusSerializer itself only', () => {
    expect(isJsonPlus(serde)).toBe(true);
    class Mine extends JsonPlusSerializer {}
    expect(isJsonPlus(new Mine())).toBe(false);
  });

  for (const [name, make] of Object.entries(VALUES)) {
    it(`gives back what the serializer gives for ${name}`, async () => {
      const expected = await viaSerde(make());
      for (const reuse of ['owned', 'copy', new Set<object>()] as const) {
        const got = await viaSaver(make(), reuse);
        expect(got).toEqual(expected);
        expect(got?.constructor).toBe(expected?.constructor);
        if (Array.isArray(expected)) {
          expect((got as unknown[]).map((m) => m?.constructor)).toEqual(expected.map((m) => m?.constructor));
        }
      }
    });
  }

  it('stores plain JSON as it is, and leaves the rest to the serializer', async () => {
    const plain = VALUES['plain JSON']?.();
    expect(await encodeValue(serde, plain)).toEqual({ kind: 'json', data: plain });
    for (const value of [
      { a: undefined },
      { at: new Date() },
      { n: -0 },
      { n: Number.NaN },
      { s: '\ud800' },
      new Array(3).fill(1, 0, 1), // a sparse array: holes at 1 and 2
      { lg_name: 'Send', node: 'a', args: {}, extra: 1 },
      { [Symbol('s')]: 1 },
      new Map(),
    ]) {
      expect(isJsonPlusPlain(value)).toBe(false);
    }
    const cycle: Record<string, unknown> = { a: 1 };
    cycle.self = cycle;
    expect(isJsonPlusPlain(cycle)).toBe(false);
    expect((await encodeValue(serde, cycle)).kind).toBe('json'); // the serializer writes '[Circular]'
  });

  it('copies when asked, and revives in place idempotently otherwise', async () => {
    const stored = JSON.parse(
      JSON.stringify(await encodeValue(serde, { messages: [new HumanMessage('hi'), message(1)] })),
    ).data as JsonValue;
    const copy = (await reviveJsonPlus(serde, stored, 'copy')) as { messages: unknown[] };
    expect(copy).not.toBe(stored);
    expect(copy.messages[1]).not.toBe((stored as { messages: unknown[] }).messages[1]);
    expect(copy.messages[0]).toBeInstanceOf(HumanMessage);

    const first = (await reviveJsonPlus(serde, stored, 'owned')) as { messages: unknown[] };
    expect(first).toBe(stored);
    expect(first.messages[0]).toBeInstanceOf(HumanMessage);
    const again = (await reviveJsonPlus(serde, stored, 'owned')) as { messages: unknown[] };
    expect(again.messages[0]).toBe(first.messages[0]);
  });

  it('hands out a page of values as they are until they share a part', async () => {
    const shared = { role: 'user', content: 'one' };
    const seen = new Set<object>();
    const first = { messages: [shared] } as JsonValue;
    const second = { messages: [shared, { role: 'assistant', content: 'two' }] } as JsonValue;
    expect(await reviveJsonPlus(serde, first, seen)).toBe(first);
    const got = (await reviveJsonPlus(serde, second, seen)) as { messages: unknown[] };
    expect(got).toEqual(second);
    expect(got.messages[0]).not.toBe(shared);
  });

  it('keeps a `__proto__` key as the serializer does', async () => {
    const stored = JSON.parse('{"a":{"__proto__":{"x":1},"y":2}}') as JsonValue;
    const expected = await serde.loadsTyped('json', JSON.stringify(stored));
    expect(await reviveJsonPlus(serde, stored, 'copy')).toEqual(expected);
    expect(({} as Record<string, unknown>).x).toBeUndefined();
  });
});
